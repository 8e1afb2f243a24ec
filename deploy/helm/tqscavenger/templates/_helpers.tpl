{{/* The chart's name. */}}
{{- define "tqscavenger.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The objects' name: the release's, unless it already holds the chart's. */}}
{{- define "tqscavenger.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "tqscavenger.selectorLabels" -}}
app.kubernetes.io/name: {{ include "tqscavenger.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: {{ .Values.mode }}
{{- end }}

{{- define "tqscavenger.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "tqscavenger.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.additionalLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The image: image.repository is required, there is no default registry. */}}
{{- define "tqscavenger.image" -}}
{{- $repo := required "image.repository is required: no image is published; build one from the Dockerfile and push it (docs/running.md, Deployment)" .Values.image.repository }}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "tqscavenger.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "tqscavenger.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The settings file: the common settings with the mode's merged over them. */}}
{{- define "tqscavenger.settings" -}}
{{- $s := deepCopy (default dict .Values.settings) }}
{{- $m := dict }}
{{- if eq .Values.mode "serve" }}
{{- $m = deepCopy (default dict .Values.serve.settings) }}
{{- else if eq .Values.mode "run" }}
{{- $m = deepCopy (default dict .Values.run.settings) }}
{{- else }}
{{- $m = deepCopy (default dict .Values.worker.settings) }}
{{- end }}
{{- $_ := set $s .Values.mode $m }}
{{- toYaml $s }}
{{- end }}

{{/* The database's environment, from database.existingSecret. */}}
{{- define "tqscavenger.dbEnv" -}}
{{- $secret := required "database.existingSecret is required: the Secret holding the DSN, the SQL password or the Temporal config" .Values.database.existingSecret }}
{{- $db := .Values.database }}
{{- if eq $db.type "dsn" }}
- name: TQSCAVENGER_DB
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $db.dsnKey }}
{{- else if eq $db.type "sql" }}
- name: SQL_PLUGIN
  value: {{ $db.sql.plugin | quote }}
- name: SQL_HOST
  value: {{ required "database.sql.host is required with database.type sql" $db.sql.host | quote }}
- name: SQL_PORT
  value: {{ $db.sql.port | quote }}
- name: SQL_DATABASE
  value: {{ $db.sql.database | quote }}
- name: SQL_USER
  value: {{ $db.sql.user | quote }}
- name: SQL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $secret }}
      key: {{ $db.sql.passwordKey }}
{{- else if eq $db.type "temporalConfig" }}
- name: TQSCAVENGER_TEMPORAL_CONFIG
  value: /etc/tqscavenger/temporal/{{ $db.temporalConfigKey }}
{{- with $db.temporalStore }}
- name: TQSCAVENGER_TEMPORAL_STORE
  value: {{ . | quote }}
{{- end }}
{{- else }}
{{- fail (printf "database.type %q: want dsn, sql or temporalConfig" $db.type) }}
{{- end }}
{{- if .Values.tls.enabled }}
{{- $tls := .Values.tls }}
{{- $_ := required "tls.existingSecret is required with tls.enabled" $tls.existingSecret }}
- name: TQSCAVENGER_TLS
  value: "true"
- name: TQSCAVENGER_TLS_CA_FILE
  value: /etc/tqscavenger/tls/{{ $tls.caKey }}
{{- if $tls.certKey }}
- name: TQSCAVENGER_TLS_CERT_FILE
  value: /etc/tqscavenger/tls/{{ $tls.certKey }}
- name: TQSCAVENGER_TLS_KEY_FILE
  value: /etc/tqscavenger/tls/{{ $tls.keyKey }}
{{- end }}
{{- with $tls.serverName }}
- name: TQSCAVENGER_TLS_SERVER_NAME
  value: {{ . | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The volumes every mode mounts: settings, the SQLite lock directory, the database's files. */}}
{{- define "tqscavenger.volumeMounts" -}}
- name: settings
  mountPath: /etc/tqscavenger/settings
  readOnly: true
# The root file system is read-only: the SQLite lock files go to /tmp.
- name: tmp
  mountPath: /tmp
{{- if eq .Values.database.type "temporalConfig" }}
- name: temporal-config
  mountPath: /etc/tqscavenger/temporal
  readOnly: true
{{- end }}
{{- if .Values.tls.enabled }}
- name: tls
  mountPath: /etc/tqscavenger/tls
  readOnly: true
{{- end }}
{{- with .Values.additionalVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "tqscavenger.volumes" -}}
- name: settings
  configMap:
    name: {{ include "tqscavenger.fullname" . }}
- name: tmp
  emptyDir:
    sizeLimit: 16Mi
{{- if eq .Values.database.type "temporalConfig" }}
- name: temporal-config
  secret:
    secretName: {{ .Values.database.existingSecret }}
    items:
      - key: {{ .Values.database.temporalConfigKey }}
        path: {{ .Values.database.temporalConfigKey }}
{{- end }}
{{- if .Values.tls.enabled }}
- name: tls
  secret:
    secretName: {{ .Values.tls.existingSecret }}
{{- end }}
{{- with .Values.additionalVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* What every pod shares: security contexts, scheduling, pull secrets. */}}
{{- define "tqscavenger.podCommon" -}}
serviceAccountName: {{ include "tqscavenger.serviceAccountName" . }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
{{- with .Values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .Values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{- define "tqscavenger.podMetadata" -}}
labels:
  {{- include "tqscavenger.selectorLabels" . | nindent 2 }}
  {{- with .Values.podLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
annotations:
  # A settings change rolls the pods (docs/running.md, "Settings changes").
  checksum/settings: {{ include "tqscavenger.settings" . | sha256sum }}
  {{- if and (eq .Values.mode "serve") .Values.metrics.annotations.enabled }}
  # Scrape every pod, not the Service: each replica counts its own passes.
  prometheus.io/scrape: "true"
  prometheus.io/port: {{ .Values.serve.service.port | quote }}
  prometheus.io/path: /metrics
  {{- end }}
  {{- with .Values.podAnnotations }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{- define "tqscavenger.container" -}}
name: tqscavenger
image: {{ include "tqscavenger.image" . }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
args: [{{ .Values.mode | quote }}, "--config", "/etc/tqscavenger/settings/tqscavenger.yaml"
  {{- if eq .Values.mode "run" }}, "--checkpoint", "/var/lib/tqscavenger/checkpoint.json", "--lock-held-ok"{{ end }}]
env:
  {{- include "tqscavenger.dbEnv" . | trim | nindent 2 }}
  {{- /* The image listens on :9464 (its TQSCAVENGER_LISTEN), which the
       environment sets over the settings file: serve listens on the
       Service's port, the worker where its settings say (default none). */}}
  {{- if eq .Values.mode "serve" }}
  - name: TQSCAVENGER_LISTEN
    value: {{ printf ":%v" .Values.serve.service.port | quote }}
  {{- else if eq .Values.mode "worker" }}
  - name: TQSCAVENGER_LISTEN
    value: {{ (default dict .Values.worker.settings).listen | default "" | quote }}
  {{- end }}
  {{- if eq .Values.mode "worker" }}
  {{- include "tqscavenger.workerEnv" . | trim | nindent 2 }}
  {{- end }}
  {{- with .Values.additionalEnv }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
resources:
  {{- toYaml .Values.resources | nindent 2 }}
securityContext:
  {{- toYaml .Values.containerSecurityContext | nindent 2 }}
{{- end }}

{{/* The worker's connection to Temporal. */}}
{{- define "tqscavenger.workerEnv" -}}
{{- $t := .Values.worker.temporal }}
- name: TEMPORAL_ADDRESS
  value: {{ required "worker.temporal.address is required in mode worker" $t.address | quote }}
- name: TEMPORAL_NAMESPACE
  value: {{ $t.namespace | quote }}
{{- with $t.taskQueue }}
- name: TQSCAVENGER_TEMPORAL_TASK_QUEUE
  value: {{ . | quote }}
{{- end }}
{{- if and $t.existingSecret $t.apiKeyKey }}
- name: TEMPORAL_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ $t.existingSecret }}
      key: {{ $t.apiKeyKey }}
{{- else if $t.existingSecret }}
- name: TQSCAVENGER_TEMPORAL_TLS_CERT_PATH
  value: /etc/tqscavenger/temporal-tls/tls.crt
- name: TQSCAVENGER_TEMPORAL_TLS_KEY_PATH
  value: /etc/tqscavenger/temporal-tls/tls.key
- name: TQSCAVENGER_TEMPORAL_TLS_CA_PATH
  value: /etc/tqscavenger/temporal-tls/ca.crt
{{- end }}
{{- end }}
