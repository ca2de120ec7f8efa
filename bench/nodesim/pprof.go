package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"
)

// checkPprofAddr refuses a -pprof-addr that is not a loopback IP and port: the profiles hold the
// agents' memory, their secrets and tokens among it, and are served without authentication.
func checkPprofAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-pprof-addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-pprof-addr %q: a loopback IP address only (the profiles hold the agents' secrets and are served to anyone who connects)", addr)
	}
	return nil
}

// servePprof serves the tool's own profiles (heap, goroutines, CPU) on addr, checked by
// checkPprofAddr: they show what the simulator itself costs per node, apart from the server it
// loads.
func servePprof(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("-pprof-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(os.Stderr, "nodesim: profiles on http://%s/debug/pprof/\n", l.Addr())
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "nodesim: serving profiles: %v\n", err)
		}
	}()
	return nil
}
