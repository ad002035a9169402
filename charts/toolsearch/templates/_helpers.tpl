{{/* Names */}}
{{- define "toolsearch.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolsearch.fullname" -}}
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

{{/* Cluster-scoped objects carry the namespace too: two releases of the same name must not collide. */}}
{{- define "toolsearch.clusterName" -}}
{{- printf "%s-%s" (include "toolsearch.fullname" .) .Release.Namespace | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolsearch.operatorName" -}}
{{- printf "%s-operator" (include "toolsearch.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolsearch.webhookServiceName" -}}
{{- printf "%s-webhook" (include "toolsearch.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolsearch.webhookSecretName" -}}
{{- printf "%s-webhook-tls" (include "toolsearch.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolsearch.proxyName" -}}
{{- printf "%s-proxy" (include "toolsearch.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolsearch.redisName" -}}
{{- printf "%s-redis" (include "toolsearch.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolsearch.serviceAccountName" -}}
{{- if .Values.operator.serviceAccount.create }}
{{- default (include "toolsearch.operatorName" .) .Values.operator.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.operator.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* Labels */}}
{{- define "toolsearch.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/name: {{ include "toolsearch.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: toolsearch
{{- end }}

{{/* Selector labels of one component: include with (list . "operator") */}}
{{- define "toolsearch.selectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "toolsearch.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Images */}}
{{- define "toolsearch.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "toolsearch.sidecarImage" -}}
{{- default (include "toolsearch.image" .) .Values.sidecar.image }}
{{- end }}

{{/* The Redis URL the chart knows for proxies in any namespace: the in-chart Redis, else redis.url. */}}
{{- define "toolsearch.redisUrl" -}}
{{- if .Values.redis.internal.enabled }}
{{- printf "redis://%s.%s.svc:6379/0" (include "toolsearch.redisName" .) .Release.Namespace }}
{{- else }}
{{- .Values.redis.url }}
{{- end }}
{{- end }}

{{/* The operator's defaults for injected proxies, keyed by their toolsearch.dev/* annotations. */}}
{{- define "toolsearch.sidecarDefaults" -}}
{{- $s := .Values.sidecar }}
{{- $defaults := dict
  "toolsearch.dev/image" (include "toolsearch.sidecarImage" .)
  "toolsearch.dev/image-pull-policy" $s.imagePullPolicy
  "toolsearch.dev/port" (toString $s.port)
  "toolsearch.dev/upstream-port" (toString $s.upstreamPort)
  "toolsearch.dev/upstream-path" $s.upstreamPath
  "toolsearch.dev/cpu" $s.resources.cpu
  "toolsearch.dev/memory" $s.resources.memory
  "toolsearch.dev/cpu-limit" $s.resources.cpuLimit
  "toolsearch.dev/memory-limit" $s.resources.memoryLimit
  "toolsearch.dev/model" $s.model.source
  "toolsearch.dev/model-image" $s.model.image
  "toolsearch.dev/model-path" $s.model.path
  "toolsearch.dev/redis-url" (include "toolsearch.redisUrl" .)
}}
{{- toJson $defaults }}
{{- end }}

{{/* Restricted Pod Security Standard for every container of the chart. */}}
{{- define "toolsearch.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "toolsearch.podSecurityContext" -}}
runAsNonRoot: true
seccompProfile:
  type: RuntimeDefault
{{- end }}
