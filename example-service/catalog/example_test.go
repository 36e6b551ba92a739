package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/upstream"
)

// The catalog API over its in-memory store, called as its tools call it:
// typed upstream calls on its routes.
func Example() {
	srv := httptest.NewServer(catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...)))
	defer srv.Close()
	api := upstream.Endpoints{catalog.ServiceKey: {Origin: srv.URL}}
	ctx := context.Background()
	type byID struct {
		ID string `json:"id"`
	}

	it, err := upstream.Call[catalog.Item](ctx, api, catalog.GetRoute, byID{"itm-2"})
	fmt.Println(it, err)

	_, err = upstream.Call[catalog.Item](ctx, api, catalog.GetRoute, byID{"itm-404"})
	var ue *upstream.Error
	fmt.Println(err, errors.As(err, &ue) && ue.Code == catalog.CodeNotFound)

	// An id that could leave its path segment is never sent.
	_, err = upstream.Call[catalog.Item](ctx, api, catalog.GetRoute, byID{"../admin"})
	fmt.Println(err)

	fmt.Println(catalog.GetRoute)
	// Output:
	// {itm-2 Milk jug 4} <nil>
	// upstream GET /catalog/api/v1/items/{id}: 404 Not Found: item "itm-404" not found true
	// invalid argument "id": value "../admin" holds '/', which an upstream may read as a path separator
	// GET /catalog/api/v1/items/{id}
}
