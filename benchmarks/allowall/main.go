// An allow-all admission webhook in Go's standard library, the reference point for
// benchmarks/serve.py: one process whose goroutines share every connection, so its
// round-to-round spread is the machine's own noise, not a placement problem.
// Usage: allowall -addr 127.0.0.1:8443 -cert tls.crt -key tls.key
package main

import (
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
)

type review struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Request    struct {
		UID string `json:"uid"`
	} `json:"request"`
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8443", "listen address")
	cert := flag.String("cert", "tls.crt", "certificate file")
	key := flag.String("key", "tls.key", "private key file")
	flag.Parse()
	http.HandleFunc("/mutate", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 3<<20))
		var in review
		if err == nil {
			err = json.Unmarshal(body, &in)
		}
		if err != nil {
			http.Error(w, `{"error":"unreadable review"}`, http.StatusBadRequest)
			return
		}
		out := map[string]any{
			"apiVersion": in.APIVersion,
			"kind":       "AdmissionReview",
			"response":   map[string]any{"uid": in.Request.UID, "allowed": true},
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	log.Fatal(http.ListenAndServeTLS(*addr, *cert, *key, nil))
}
