"""The management API (`/api/v1/workspaces/{ws}/…`, SPEC R-MGT-1; docs/management-api.md):
views, serializers, authentication and the schema of every resource a workspace sets. It
sits on top: it calls the apps' services and reads the gateway's runtime state; no app
imports it."""
