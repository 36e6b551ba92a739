package catalog

import (
	"net/http"
)

// OpenAPIRoute serves the API's own OpenAPI document ([OpenAPI]). No tool
// declares it: it is not one of [Routes].
var OpenAPIRoute = route(http.MethodGet, "/openapi.json")

// OpenAPI returns the catalog API's OpenAPI 3.1 document (JSON), which
// the handler serves at [OpenAPIRoute]. It is written by hand, as the
// API's contract, not derived from the routes the tools declare: a test
// holds the tools to it (authz/export's CheckOpenAPI).
func OpenAPI() []byte { return []byte(openAPIDocument) }

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Write([]byte(openAPIDocument))
}

const openAPIDocument = `{
  "openapi": "3.1.0",
  "info": {
    "title": "catalog",
    "version": "1.0.0",
    "description": "example-service's catalog API: items with a name and a quantity in stock."
  },
  "paths": {
    "/api/v1/items": {
      "get": {
        "operationId": "listItems",
        "summary": "List every item.",
        "responses": {
          "200": {"description": "The items.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ItemList"}}}}
        }
      },
      "post": {
        "operationId": "createItem",
        "summary": "Create an item.",
        "requestBody": {"$ref": "#/components/requestBodies/ItemInput"},
        "responses": {
          "201": {
            "description": "The item created.",
            "headers": {"Location": {"description": "The item's path.", "schema": {"type": "string"}}},
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Item"}}}
          },
          "400": {"$ref": "#/components/responses/Error"},
          "413": {"$ref": "#/components/responses/Error"},
          "415": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/api/v1/items/{id}": {
      "parameters": [{"name": "id", "in": "path", "required": true, "description": "The item's id.", "schema": {"type": "string", "minLength": 1}}],
      "get": {
        "operationId": "getItem",
        "summary": "Fetch one item.",
        "responses": {
          "200": {"description": "The item.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Item"}}}},
          "404": {"$ref": "#/components/responses/Error"}
        }
      },
      "put": {
        "operationId": "updateItem",
        "summary": "Replace an item's name and quantity.",
        "requestBody": {"$ref": "#/components/requestBodies/ItemInput"},
        "responses": {
          "200": {"description": "The item updated.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Item"}}}},
          "400": {"$ref": "#/components/responses/Error"},
          "404": {"$ref": "#/components/responses/Error"},
          "413": {"$ref": "#/components/responses/Error"},
          "415": {"$ref": "#/components/responses/Error"}
        }
      },
      "delete": {
        "operationId": "deleteItem",
        "summary": "Delete an item.",
        "responses": {
          "204": {"description": "Deleted."},
          "404": {"$ref": "#/components/responses/Error"}
        }
      }
    },
    "/openapi.json": {
      "get": {
        "operationId": "getOpenAPI",
        "summary": "This document.",
        "responses": {"200": {"description": "The API's OpenAPI document.", "content": {"application/json": {}}}}
      }
    }
  },
  "components": {
    "schemas": {
      "Item": {
        "type": "object",
        "required": ["id", "name", "quantity"],
        "properties": {
          "id": {"type": "string", "description": "The item's id."},
          "name": {"type": "string", "description": "The item's name."},
          "quantity": {"type": "integer", "description": "How many are in stock."}
        }
      },
      "ItemList": {
        "type": "object",
        "required": ["items"],
        "properties": {"items": {"type": "array", "items": {"$ref": "#/components/schemas/Item"}}}
      },
      "ItemInput": {
        "type": "object",
        "additionalProperties": false,
        "required": ["name", "quantity"],
        "properties": {
          "name": {"type": "string", "minLength": 1, "maxLength": 200},
          "quantity": {"type": "integer", "minimum": 0, "maximum": 1000000}
        }
      },
      "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {
          "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
              "code": {"type": "string", "enum": ["not_found", "invalid_request", "unsupported_media_type", "method_not_allowed", "too_large"]},
              "message": {"type": "string"}
            }
          }
        }
      }
    },
    "requestBodies": {
      "ItemInput": {
        "required": true,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ItemInput"}}}
      }
    },
    "responses": {
      "Error": {"description": "An error.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    }
  }
}
`
