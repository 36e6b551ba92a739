package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode"

	"github.com/toolroute/toolroute/tool"
)

// Limits the API enforces.
const (
	// MaxBodyBytes is the largest request body the API reads.
	MaxBodyBytes = 64 << 10
	// MaxNameLen is the longest item name, in bytes.
	MaxNameLen = 200
	// MaxQuantity is the largest item quantity.
	MaxQuantity = 1_000_000
)

// Error codes of the API's JSON errors.
const (
	CodeNotFound             = "not_found"
	CodeInvalidRequest       = "invalid_request"
	CodeUnsupportedMediaType = "unsupported_media_type"
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeTooLarge             = "too_large"
)

// ItemInput is the body of a create or update request. Both fields are
// required.
type ItemInput struct {
	Name     string `json:"name"`
	Quantity *int   `json:"quantity"`
}

// ItemList is the body of a list response.
type ItemList struct {
	Items []Item `json:"items"`
}

// errorBody is the JSON shape of every error response.
type errorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail is the detail of a JSON error response.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// NewHandler returns the catalog API over s. Its routes are [Routes],
// and [OpenAPIRoute] serves its OpenAPI document; every other path
// answers 404 and every other method 405, both as JSON errors.
func NewHandler(s *Store) http.Handler {
	h := &handler{store: s}
	mux := http.NewServeMux()
	mux.HandleFunc(pattern(ListRoute), h.list)
	mux.HandleFunc(pattern(GetRoute), h.get)
	mux.HandleFunc(pattern(CreateRoute), h.create)
	mux.HandleFunc(pattern(UpdateRoute), h.update)
	mux.HandleFunc(pattern(DeleteRoute), h.delete)
	// Method-less patterns are less specific than the ones above: they
	// catch only the methods no route serves.
	mux.HandleFunc(ListRoute.ServicePath(), methodNotAllowed(ListRoute, CreateRoute))
	mux.HandleFunc(GetRoute.ServicePath(), methodNotAllowed(GetRoute, UpdateRoute, DeleteRoute))
	mux.HandleFunc(pattern(OpenAPIRoute), serveOpenAPI)
	mux.HandleFunc(OpenAPIRoute.ServicePath(), methodNotAllowed(OpenAPIRoute))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, CodeNotFound, "no such resource")
	})
	return mux
}

type handler struct {
	store *Store
}

func (h *handler) list(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, ItemList{Items: h.store.List()})
}

func (h *handler) get(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	it, ok := h.store.Get(id)
	if !ok {
		writeNotFound(w, id)
		return
	}
	writeJSON(w, http.StatusOK, it)
}

func (h *handler) create(w http.ResponseWriter, r *http.Request) {
	in, ok := readInput(w, r)
	if !ok {
		return
	}
	it := h.store.Create(in.Name, *in.Quantity)
	if loc, err := GetRoute.Bind(map[string]string{"id": it.ID}); err == nil {
		w.Header().Set("Location", loc.ServicePath())
	}
	writeJSON(w, http.StatusCreated, it)
}

func (h *handler) update(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	in, ok := readInput(w, r)
	if !ok {
		return
	}
	it, ok := h.store.Update(id, in.Name, *in.Quantity)
	if !ok {
		writeNotFound(w, id)
		return
	}
	writeJSON(w, http.StatusOK, it)
}

func (h *handler) delete(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !h.store.Delete(id) {
		writeNotFound(w, id)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func methodNotAllowed(routes ...tool.Route) http.HandlerFunc {
	var allow []string
	for _, r := range routes {
		allow = append(allow, r.Method)
		if r.Method == http.MethodGet {
			allow = append(allow, http.MethodHead)
		}
	}
	header := strings.Join(allow, ", ")
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", header)
		writeError(w, http.StatusMethodNotAllowed, CodeMethodNotAllowed, fmt.Sprintf("method %s not allowed (allowed: %s)", r.Method, header))
	}
}

// readInput decodes and validates a create or update body, answering the
// request itself when it is bad.
func readInput(w http.ResponseWriter, r *http.Request) (ItemInput, bool) {
	var in ItemInput
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeError(w, http.StatusUnsupportedMediaType, CodeUnsupportedMediaType, "the body must be application/json")
		return in, false
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	dec.DisallowUnknownFields()
	err = dec.Decode(&in)
	if err == nil {
		_, err = dec.Token()
		switch mbe := (*http.MaxBytesError)(nil); {
		case err == io.EOF:
			err = nil
		case !errors.As(err, &mbe):
			err = errors.New("unexpected data after the JSON object")
		}
	}
	if err != nil {
		if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
			writeError(w, http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("the body exceeds %d bytes", MaxBodyBytes))
			return in, false
		}
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, "malformed JSON body: "+err.Error())
		return in, false
	}
	if err := in.Validate(); err != nil {
		writeError(w, http.StatusBadRequest, CodeInvalidRequest, err.Error())
		return in, false
	}
	return in, true
}

// Validate reports whether in is a valid item: a name of 1 to
// [MaxNameLen] bytes, not blank and without control characters, and a
// quantity from 0 to [MaxQuantity].
func (in ItemInput) Validate() error {
	var errs []error
	switch {
	case strings.TrimSpace(in.Name) == "":
		errs = append(errs, errors.New("name is required"))
	case len(in.Name) > MaxNameLen:
		errs = append(errs, fmt.Errorf("name is %d bytes long, at most %d allowed", len(in.Name), MaxNameLen))
	case strings.IndexFunc(in.Name, unicode.IsControl) >= 0:
		errs = append(errs, errors.New("name must not contain control characters"))
	}
	switch {
	case in.Quantity == nil:
		errs = append(errs, errors.New("quantity is required"))
	case *in.Quantity < 0 || *in.Quantity > MaxQuantity:
		errs = append(errs, fmt.Errorf("quantity must be between 0 and %d", MaxQuantity))
	}
	return errors.Join(errs...)
}

func writeNotFound(w http.ResponseWriter, id string) {
	writeError(w, http.StatusNotFound, CodeNotFound, fmt.Sprintf("item %q not found", id))
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, errorBody{Error: ErrorDetail{Code: code, Message: msg}})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
