{{/* Names and labels. */}}
{{- define "mcp-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mcp-gateway.fullname" -}}
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

{{- define "mcp-gateway.redisName" -}}
{{- printf "%s-redis" (include "mcp-gateway.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mcp-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mcp-gateway.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "mcp-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "mcp-gateway.redisSelectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-gateway.name" . }}-redis
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Replicas the chart runs at least (the HPA's minimum when autoscaling). */}}
{{- define "mcp-gateway.minReplicas" -}}
{{- if .Values.autoscaling.enabled }}{{ int .Values.autoscaling.minReplicas }}{{ else }}{{ int .Values.replicaCount }}{{ end }}
{{- end }}

{{/* The gateway config: .Values.config plus what the chart owns (listeners, session store). */}}
{{- define "mcp-gateway.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) }}
{{- $_ := set $cfg "listen" (printf "0.0.0.0:%d" (int .Values.ports.mcp)) }}
{{- $_ := set $cfg "admin" (printf "0.0.0.0:%d" (int .Values.ports.admin)) }}
{{- $sessions := get $cfg "sessions" | default dict }}
{{- $_ := set $sessions "store" .Values.sessions.store }}
{{- if eq .Values.sessions.store "redis" }}
{{- $r := .Values.sessions.redis }}
{{- $urls := $r.externalUrls }}
{{- if $r.bundled }}
{{- $redis := include "mcp-gateway.redisName" . }}
{{- $urls = list (printf "redis://%s-0.%s:6379/0" $redis $redis) }}
{{- end }}
{{- $_ := set $sessions "redis" (dict "urls" $urls "cluster" $r.cluster "key-prefix" $r.keyPrefix) }}
{{- end }}
{{- $_ := set $cfg "sessions" $sessions }}
{{- toYaml $cfg }}
{{- end }}

{{/* Fails rendering on values that cannot work together, saying why. */}}
{{- define "mcp-gateway.validate" -}}
{{- $v := .Values }}
{{- $store := $v.sessions.store }}
{{- if not (has $store (list "memory" "redis")) }}
{{- fail (printf "sessions.store: %q is neither memory nor redis" $store) }}
{{- end }}
{{- if not (has $v.configReload (list "watch" "restart")) }}
{{- fail (printf "configReload: %q is neither watch nor restart" $v.configReload) }}
{{- end }}
{{- if eq $store "memory" }}
{{- if $v.autoscaling.enabled }}
{{- fail "autoscaling.enabled needs sessions.store: redis (with the memory store each replica knows only its own sessions)" }}
{{- end }}
{{- if gt (int $v.replicaCount) 1 }}
{{- fail (printf "replicaCount: %d replicas need sessions.store: redis (with the memory store each replica knows only its own sessions); use 1 replica or the redis store" (int $v.replicaCount)) }}
{{- end }}
{{- else }}
{{- if and $v.sessions.redis.bundled $v.sessions.redis.externalUrls }}
{{- fail "sessions.redis: give externalUrls with bundled: false, not both" }}
{{- end }}
{{- if and (not $v.sessions.redis.bundled) (not $v.sessions.redis.externalUrls) }}
{{- fail "sessions.redis: bundled is false and no externalUrls are given: name your Redis" }}
{{- end }}
{{- if and $v.sessions.redis.bundled $v.sessions.redis.cluster }}
{{- fail "sessions.redis.cluster: the bundled Redis is one instance, not a cluster" }}
{{- end }}
{{- range $v.sessions.redis.externalUrls }}
{{- if not (or (hasPrefix "redis://" .) (hasPrefix "rediss://" .)) }}
{{- fail (printf "sessions.redis.externalUrls: %q is not a redis:// or rediss:// URL" .) }}
{{- end }}
{{- end }}
{{- end }}
{{- range $key := list "listen" "admin" }}
{{- if hasKey ($v.config | default dict) $key }}
{{- fail (printf "config.%s is set by the chart (from ports.*): remove it" $key) }}
{{- end }}
{{- end }}
{{- range $key := list "store" "redis" }}
{{- if hasKey (get ($v.config | default dict) "sessions" | default dict) $key }}
{{- fail (printf "config.sessions.%s is set by the chart (from sessions.*): remove it" $key) }}
{{- end }}
{{- end }}
{{- if and $v.autoscaling.enabled (gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas)) }}
{{- fail "autoscaling: minReplicas is above maxReplicas" }}
{{- end }}
{{- $min := int (include "mcp-gateway.minReplicas" .) }}
{{- if and $v.podDisruptionBudget.enabled (gt $min 1) (ge (int $v.podDisruptionBudget.maxUnavailable) $min) }}
{{- fail "podDisruptionBudget.maxUnavailable would let a drain take every replica at once" }}
{{- end }}
{{- end }}
