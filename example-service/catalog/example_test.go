package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"

	"github.com/toolroute/toolroute/example-service/catalog"
)

// The catalog API over its in-memory store, and its typed client.
func Example() {
	srv := httptest.NewServer(catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...)))
	defer srv.Close()
	c := &catalog.Client{BaseURL: srv.URL}
	ctx := context.Background()

	it, err := c.Get(ctx, "itm-2")
	fmt.Println(it, err)

	_, err = c.Get(ctx, "itm-404")
	var nf *catalog.NotFoundError
	fmt.Println(err, errors.As(err, &nf))

	// An id that could leave its path segment is never sent.
	_, err = c.Get(ctx, "../admin")
	var bad *catalog.InvalidIDError
	fmt.Println(errors.As(err, &bad))

	fmt.Println(catalog.GetRoute)
	// Output:
	// {itm-2 Milk jug 4} <nil>
	// item "itm-404" not found true
	// true
	// GET /catalog/api/v1/items/{id}
}
