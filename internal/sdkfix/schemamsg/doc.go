// Package schemamsg works around google/jsonschema-go issue #20
// ("Validation errors are too verbose", opened for the go-sdk, open at
// go-sdk v1.8.0): it rewrites the go-sdk's texts for tool arguments their
// input schema refuses into plain text. No go-sdk issue tracks it; the SDK
// passes the validator's error chain through as it is. Nothing here is
// API.
//
// The SDK answers such arguments with an isError result whose text is
// the validator's (google/jsonschema-go) error chain:
//
//	validating "arguments": validating root: validating /properties/count: type: <invalid reflect.Value> has type "null", want "integer"
//	validating "arguments": validating root: validating /properties/count: maximum: 100000000000000000000/1 is greater than 1000000.000000
//
// The first reads as a bug, the second as noise. [Plain] rewrites these
// two kinds into plain text, naming the argument, under the SDK's prefix
// that every validation text shares:
//
//	validating "arguments": argument "count": null is not allowed (want integer)
//	validating "arguments": argument "count": maximum: 1e+20 is greater than 1000000
//
// Every other validation text is left as the SDK wrote it.
//
// Delete this package when TestCanarySDKValidationTexts fails because the
// SDK's texts are plain already; update it when they changed otherwise.
package schemamsg
