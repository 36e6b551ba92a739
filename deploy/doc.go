// Package deploy holds the deployment kit of example-service — a
// Dockerfile, a compose file (three replicas, Redis, a round-robin load
// balancer) and Kubernetes manifests — and, in its tests, the checks
// that keep them true without a cluster or a Docker daemon: every
// manifest decodes strictly into the Kubernetes API types, every
// environment variable they set is one the binary accepts (with a value
// it accepts), and the shutdown timings add up.
//
// It is a module of its own (k8s.io/api is heavy, and only these tests
// need it); .ci/run tests it.
package deploy
