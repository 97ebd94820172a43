{{- define "sqe.fullname" -}}
{{- printf "%s-sqe" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "sqe.labels" -}}
app.kubernetes.io/name: sqe
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "sqe.secretName" -}}
{{- if .Values.workerSecret.existingSecret -}}
{{- .Values.workerSecret.existingSecret -}}
{{- else -}}
{{- printf "%s-worker-secret" (include "sqe.fullname" .) -}}
{{- end -}}
{{- end -}}

{{- define "sqe.hasSecret" -}}
{{- if or .Values.workerSecret.existingSecret .Values.workerSecret.value -}}true{{- end -}}
{{- end -}}

{{- define "sqe.checkSecret" -}}
{{- if and .Values.requireWorkerSecret (not (include "sqe.hasSecret" .)) -}}
{{- fail "requireWorkerSecret is set: give workerSecret.existingSecret (or workerSecret.value); production clusters refuse unauthenticated workers" -}}
{{- end -}}
{{- if and (not (include "sqe.hasSecret" .)) (not .Values.allowUnauthenticatedWorkers) -}}
{{- fail "no worker secret: set workerSecret.existingSecret or workerSecret.value (or, on a private test network, allowUnauthenticatedWorkers=true)" -}}
{{- end -}}
{{- if and .Values.clusterTls.enabled (not .Values.clusterTls.secretName) -}}
{{- fail "clusterTls.enabled needs clusterTls.secretName: a kubernetes.io/tls Secret with tls.crt, tls.key and ca.crt (a cert-manager Certificate's)" -}}
{{- end -}}
{{- if not (has .Values.worker.discovery (list "register" "dns")) -}}
{{- fail (printf "worker.discovery is %q: use \"register\" or \"dns\"" .Values.worker.discovery) -}}
{{- end -}}
{{- end -}}

{{- define "sqe.commonEnv" -}}
- name: SQE_VERSION
  value: {{ .Values.image.tag | quote }}
{{- if include "sqe.hasSecret" . }}
- name: SQE_WORKER_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ include "sqe.secretName" . }}
      key: {{ .Values.workerSecret.key }}
{{- end }}
{{- if .Values.storage.credentialsSecret }}
- name: SQE_STORAGE__S3_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef: {name: {{ .Values.storage.credentialsSecret }}, key: access-key-id}
- name: SQE_STORAGE__S3_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef: {name: {{ .Values.storage.credentialsSecret }}, key: secret-access-key}
{{- end }}
- name: SQE_LOG_FORMAT
  value: json
{{- end -}}

{{/* http or https: the scheme of URLs between the nodes. */}}
{{- define "sqe.peerScheme" -}}
{{- if .Values.clusterTls.enabled -}}https{{- else -}}http{{- end -}}
{{- end -}}

{{/* The [cluster] section of both configs: TLS between the nodes from the mounted Secret. */}}
{{- define "sqe.cluster" -}}
{{- if .Values.clusterTls.enabled }}

[cluster]
tls_cert_file = "/etc/sqe/tls/tls.crt"
tls_key_file = "/etc/sqe/tls/tls.key"
tls_ca_file = "/etc/sqe/tls/ca.crt"
tls_client_auth = {{ .Values.clusterTls.mutual }}
tls_server_name = {{ .Values.clusterTls.serverName | quote }}
{{- end }}
{{- end -}}

{{/* The cluster certificate's volume and mount, when TLS between the nodes is on. */}}
{{- define "sqe.tlsMount" -}}
{{- if .Values.clusterTls.enabled }}
- {name: cluster-tls, mountPath: /etc/sqe/tls, readOnly: true}
{{- end }}
{{- end -}}
{{- define "sqe.tlsVolume" -}}
{{- if .Values.clusterTls.enabled }}
- name: cluster-tls
  secret: {secretName: {{ .Values.clusterTls.secretName }}}
{{- end }}
{{- end -}}

{{/* The [telemetry] section of both configs: spans over OTLP gRPC when an endpoint is set. */}}
{{- define "sqe.telemetry" -}}
{{- with .Values.telemetry }}
{{- if .otlpEndpoint }}
[telemetry]
otlp_endpoint = {{ .otlpEndpoint | quote }}
{{- if and (not (kindIs "invalid" .samplingRatio)) (ne (toString .samplingRatio) "") }}
sampling_ratio = {{ .samplingRatio }}
{{- end }}
[telemetry.resource_attributes]
{{- range $key, $value := merge (dict) (.resourceAttributes | default dict) (dict "k8s.namespace.name" $.Release.Namespace) }}
{{ $key | quote }} = {{ $value | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}
