// Package rpcscan reads, from the body of an HTTP request, the ids of the
// JSON-RPC tools/call requests it carries and the ids its
// notifications/cancelled name, without decoding the body into messages:
// the server ties each stateless call to its request, and cancels it when
// a notifications/cancelled naming it arrives in another request (the
// go-sdk #1093 workaround: see internal/sdkfix/statelesscancel). Nothing
// here is API.
//
// [Scan] reads a single, plainly spelt message in place, and leaves
// anything else (a batch, escapes, keys json.Unmarshal would match
// case-insensitively) to json.Unmarshal; both ways find the same ids
// (FuzzScanMessages checks it). [IDKey] turns a JSON-RPC id into a map
// key that keeps a string id and a number id of the same text apart;
// [KeyJSON] turns it back.
package rpcscan
