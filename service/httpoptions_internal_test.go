package service

import "testing"

// TestHTTPOptionsSDKTransport: -sdk-transport reaches the HTTP server as
// server.HTTPOptions.SDKTransport, whose effect (no handler of
// toolroute's transport) package server's tests hold; without it, the
// option stays off.
func TestHTTPOptionsSDKTransport(t *testing.T) {
	for _, on := range []bool{false, true} {
		k := &kit{cfg: Config{SDKTransport: on}, acc: &access{}}
		if got := k.httpOptions().Endpoint.SDKTransport; got != on {
			t.Errorf("Config.SDKTransport %v: HTTPOptions.SDKTransport %v", on, got)
		}
	}
}
