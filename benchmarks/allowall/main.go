// An allow-all admission webhook in Go's standard library, the reference point for
// benchmarks/serve.py: one process whose goroutines share every connection, so its
// round-to-round spread is the machine's own noise, not a placement problem.
// With -patch it also returns, for every review, the JSON Patch ServingGate returns for
// benchmarks/apiserver_pods.py's tiny pod as the API server sends it (defaulted: the scheduler
// is replaced, the PodGroup annotation added), so that through a real API server it is a Go
// peer whose answers cost the API server what ours do.
// Usage: allowall -addr 127.0.0.1:8443 -cert tls.crt -key tls.key [-patch]
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
	patch := flag.Bool("patch", false, "answer with the tiny pod's JSON Patch, as ServingGate does")
	flag.Parse()
	tinyPatch := []byte(`[{"op":"add","path":"/metadata/annotations","value":{"scheduling.k8s.io/group-name":"bench"}},` +
		`{"op":"replace","path":"/spec/schedulerName","value":"volcano"}]`)
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
		response := map[string]any{"uid": in.Request.UID, "allowed": true}
		if *patch {
			response["patchType"] = "JSONPatch"
			response["patch"] = tinyPatch // []byte: encoding/json writes it in base64, as the field wants
		}
		out := map[string]any{"apiVersion": in.APIVersion, "kind": "AdmissionReview", "response": response}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	})
	log.Fatal(http.ListenAndServeTLS(*addr, *cert, *key, nil))
}
