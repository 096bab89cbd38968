{{- /* Labels: the kustomize base's (name, component) plus Helm's; selectors use the first two only. */}}
{{- define "servinggate.selectorLabels" -}}
app.kubernetes.io/name: servinggate
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{- define "servinggate.labels" -}}
{{ include "servinggate.selectorLabels" . }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version }}
{{- end }}

{{- define "servinggate.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- /* How serve gets its certificate: self only in mode self without webhook.url. */}}
{{- define "servinggate.certManagement" -}}
{{- if and (eq .Values.certificates.mode "self") (not .Values.webhook.url) -}}self{{- else -}}files{{- end -}}
{{- end }}

{{- /* The CA the API server trusts, where the chart knows it (url, manual); "" otherwise. */}}
{{- define "servinggate.caBundle" -}}
{{- if .Values.webhook.url -}}
{{ required "webhook.caBundle is required with webhook.url" .Values.webhook.caBundle }}
{{- else if eq .Values.certificates.mode "manual" -}}
{{ required "certificates.caBundle is required with certificates.mode=manual" .Values.certificates.caBundle }}
{{- end -}}
{{- end }}

{{- define "servinggate.clientConfig" -}}
{{- $v := .root.Values -}}
{{- with include "servinggate.caBundle" .root }}
caBundle: {{ . }}
{{- end }}
{{- if $v.webhook.url }}
url: {{ printf "%s%s" (trimSuffix "/" $v.webhook.url) .path | quote }}
{{- else }}
service:
  name: {{ include "servinggate.serviceName" .root }}
  namespace: {{ .root.Release.Namespace }}
  path: {{ .path }}
  port: 443
{{- end }}
{{- end }}

{{- /* cert-manager's cainjector fills caBundle from the Certificate named here. */}}
{{- define "servinggate.webhookAnnotations" -}}
{{- if and (eq .Values.certificates.mode "cert-manager") (not .Values.webhook.url) -}}
cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "servinggate.serviceName" . }}
{{- end -}}
{{- end }}

{{- define "servinggate.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 10001
runAsGroup: 10001
fsGroup: 10001
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "servinggate.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: ["ALL"]
{{- end }}

{{- define "servinggate.spread" -}}
- maxSkew: 1
  topologyKey: kubernetes.io/hostname
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- include "servinggate.selectorLabels" . | nindent 6 }}
{{- end }}

{{- /* serve's and audit's --rule-actions from ruleActions (RULE=ACTION,...), "" when empty: one
source for both, so the auditor calls a deny what the webhook refuses. */}}
{{- define "servinggate.ruleActions" -}}
{{- $pairs := list }}
{{- range $rule, $action := .Values.ruleActions }}
{{- $pairs = append $pairs (printf "%s=%s" $rule $action) }}
{{- end }}
{{- join "," $pairs }}
{{- end }}

{{- /* The webhook's probe target: the HTTPS port, or with clientCA (the admission port then asks
every caller for a client certificate, which the kubelet has not) the plain-HTTP metrics port,
which answers /healthz and /readyz too. */}}
{{- define "servinggate.probePort" -}}
{{- if .Values.clientCA.secretName -}}
port: metrics
scheme: HTTP
{{- else -}}
port: https
scheme: HTTPS
{{- end }}
{{- end }}
