{{/*
Helpers shared by the templates. Each template mirrors the file of manifests/ it is named after,
with the manifests' own object names (tessel-scheduler, ...), not prefixed with the release name:
the cluster-scoped objects (ClusterRoles, PriorityClasses, FlowSchemas) exist once per cluster,
as with `kubectl apply -k manifests/`. One release per cluster.
*/}}

{{/* Labels Helm adds to every object it creates (the manifests have none of these). */}}
{{- define "tessel.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* The label the Deployment selects its pods by (the manifests' one label). */}}
{{- define "tessel.selectorLabels" -}}
app.kubernetes.io/name: tessel-scheduler
{{- end -}}

{{/* The Lease the replicas elect a leader on: its namespace and name. */}}
{{- define "tessel.lockNamespace" -}}
{{- .Values.leaderElection.lockNamespace | default .Release.Namespace -}}
{{- end -}}
{{- define "tessel.lockName" -}}
{{- .Values.leaderElection.lockName | default "tessel-scheduler" -}}
{{- end -}}

{{- define "tessel.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/*
config.yaml of the ConfigMap: schedulerConfig as given when it is a string (the whole file),
else the map rendered as YAML with apiVersion and kind filled in when absent.
*/}}
{{- define "tessel.schedulerConfig" -}}
{{- $c := .Values.schedulerConfig -}}
{{- if kindIs "string" $c -}}
{{- $c -}}
{{- else if kindIs "map" $c -}}
{{- $defaults := dict "apiVersion" "tessel.io/v1alpha1" "kind" "TesselSchedulerConfiguration" -}}
{{- toYaml (merge (deepCopy $c) $defaults) -}}
{{- else -}}
{{- fail (printf "schedulerConfig: expected a map (the configuration) or a string (the whole config.yaml), got %s" (kindOf $c)) -}}
{{- end -}}
{{- end -}}
