//go:build !herdgrpc
// +build !herdgrpc

// go-grpc in an adapter built without Debian's grpc-go (golang-google-grpc-dev): the
// other Go clients do not need it, so herd builds them without it and this client says
// what to install.
package main

import "errors"

func init() {
	builders["go-grpc"] = func(Config, bool) (*Client, error) {
		return nil, errors.New("this herd-go-arm was built without grpc-go: apt-get install golang-google-grpc-dev, then run herd again (it rebuilds the adapter)")
	}
}
