#!/usr/bin/env bash
# Makes the Secrets gpuvpa mounts: TLS from a new private CA (openssl), and the updater's
# change key, as one YAML file to `kubectl apply -f`. Use your own PKI (cert-manager, Vault)
# instead by creating Secrets with the same names and keys (tls.crt, tls.key, ca.crt):
#   gpuvpa-recommender-tls      server: gpuvpa-recommender (its gRPC requires client certificates)
#   gpuvpa-updater-client-tls   client: the updater, to the recommender
#   gpuvpa-scaler-client-tls    client: the scaler, to the recommender's ledger
#   gpuvpa-scaler-tls           server: gpuvpa-scaler (KEDA's client certificate must chain to ca.crt)
#   gpuvpa-scaler-client        client: KEDA, in each workload namespace (TriggerAuthentication)
# and gpuvpa-updater-change-key (key change.key: 48 random bytes, base64) that signs the
# updater's applied-change annotations, so a rollback restores only what an updater wrote, and
# gpuvpa-cost-api (key token: 32 random bytes, hex) that the cost API's clients send as a bearer
# token (Grafana's Infinity datasource: an Authorization header "Bearer <token>").
# With --ledger-url-file FILE (the postgres-ledger overlay), also gpuvpa-ledger-db (key url:
# the file's first line, a postgresql:// URL of a role that may only insert and select).
# Usage: make-secrets.sh [--namespace gpuvpa] [--workload-namespace agents]...
#                        [--ledger-url-file FILE] OUTDIR
# Writes OUTDIR/secrets.yaml (and the CA's key, OUTDIR/ca.key: keep it or delete it). Keys are
# written with mode 0600 and never printed.
set -euo pipefail
ns=gpuvpa
workload_namespaces=()
ledger_url_file=""
while [ $# -gt 0 ]; do
  case "$1" in
    --namespace) ns="$2"; shift 2 ;;
    --workload-namespace) workload_namespaces+=("$2"); shift 2 ;;
    --ledger-url-file) ledger_url_file="$2"; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "make-secrets.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ $# -eq 1 ] || { echo "make-secrets.sh: give one output folder (see --help)" >&2; exit 2; }
[ ${#workload_namespaces[@]} -gt 0 ] || workload_namespaces=(agents)
if [ -n "$ledger_url_file" ] && ! head -n1 "$ledger_url_file" | grep -q '^postgres\(ql\)\?://'; then
  echo "make-secrets.sh: --ledger-url-file $ledger_url_file: its first line is not a postgresql:// URL" >&2
  exit 2
fi
out="$1"
mkdir -p "$out"
umask 077
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

openssl req -x509 -newkey rsa:2048 -nodes -days 825 -subj "/CN=gpuvpa-ca" \
  -keyout "$out/ca.key" -out "$work/ca.crt" 2>/dev/null

# cert NAME CN SANS USAGE: a key and a certificate signed by the CA.
cert() {
  local name="$1" cn="$2" sans="$3" usage="$4"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$cn" -keyout "$work/$name.key" \
    -out "$work/$name.csr" 2>/dev/null
  {
    echo "extendedKeyUsage=$usage"
    [ -z "$sans" ] || echo "subjectAltName=$sans"
  } >"$work/$name.ext"
  openssl x509 -req -in "$work/$name.csr" -CA "$work/ca.crt" -CAkey "$out/ca.key" \
    -CAcreateserial -days 825 -extfile "$work/$name.ext" -out "$work/$name.crt" 2>/dev/null
}
svc_sans() { echo "DNS:$1,DNS:$1.$ns,DNS:$1.$ns.svc,DNS:$1.$ns.svc.cluster.local"; }
# The recommender's shards (the postgres-ledger overlay) answer by their own names too.
cert recommender gpuvpa-recommender \
  "$(svc_sans gpuvpa-recommender),DNS:*.gpuvpa-recommender-shards.$ns.svc,DNS:*.gpuvpa-recommender-shards.$ns.svc.cluster.local" \
  serverAuth
cert scaler gpuvpa-scaler "$(svc_sans gpuvpa-scaler)" serverAuth
cert updater-client gpuvpa-updater "" clientAuth
cert scaler-client gpuvpa-scaler "" clientAuth
cert keda-client keda-operator "" clientAuth

b64() { base64 -w0 <"$1"; }
secret() {  # secret NAME NAMESPACE CERT
  cat <<YAML
---
apiVersion: v1
kind: Secret
metadata:
  name: $1
  namespace: $2
  labels: {app.kubernetes.io/part-of: gpuvpa}
type: kubernetes.io/tls
data:
  ca.crt: $(b64 "$work/ca.crt")
  tls.crt: $(b64 "$work/$3.crt")
  tls.key: $(b64 "$work/$3.key")
YAML
}
{
  secret gpuvpa-recommender-tls "$ns" recommender
  secret gpuvpa-updater-client-tls "$ns" updater-client
  secret gpuvpa-scaler-client-tls "$ns" scaler-client
  secret gpuvpa-scaler-tls "$ns" scaler
  for w in "${workload_namespaces[@]}"; do secret gpuvpa-scaler-client "$w" keda-client; done
  cat <<YAML
---
apiVersion: v1
kind: Secret
metadata:
  name: gpuvpa-updater-change-key
  namespace: $ns
  labels: {app.kubernetes.io/part-of: gpuvpa}
type: Opaque
data:
  change.key: $(openssl rand -base64 48 | tr -d '\n' | base64 -w0)
YAML
  cat <<YAML
---
apiVersion: v1
kind: Secret
metadata:
  name: gpuvpa-cost-api
  namespace: $ns
  labels: {app.kubernetes.io/part-of: gpuvpa}
type: Opaque
data:
  token: $(openssl rand -hex 32 | tr -d '\n' | base64 -w0)
YAML
  if [ -n "$ledger_url_file" ]; then
    cat <<YAML
---
apiVersion: v1
kind: Secret
metadata:
  name: gpuvpa-ledger-db
  namespace: $ns
  labels: {app.kubernetes.io/part-of: gpuvpa}
type: Opaque
data:
  url: $(head -n1 "$ledger_url_file" | tr -d '\n' | base64 -w0)
YAML
  fi
} >"$out/secrets.yaml"
echo "wrote $out/secrets.yaml (apply it with kubectl apply -f) and the CA key $out/ca.key"
