package catalog_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolroute/toolroute/example-service/catalog"
)

// TestOpenAPIServed: the handler serves the document at GET
// /openapi.json as JSON, and answers other methods there with a JSON 405.
func TestOpenAPIServed(t *testing.T) {
	srv := httptest.NewServer(catalog.NewHandler(catalog.NewStore()))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(body, catalog.OpenAPI()) {
		t.Errorf("GET /openapi.json: %d %q, body equal: %v", resp.StatusCode, resp.Header.Get("Content-Type"), bytes.Equal(body, catalog.OpenAPI()))
	}
	if !json.Valid(body) {
		t.Error("the document is not JSON")
	}
	resp, err = http.Post(srv.URL+"/openapi.json", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /openapi.json: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}
