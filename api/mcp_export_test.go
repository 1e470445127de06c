package api

// MCPToolExclusions exposes the authenticated routes that are not tools,
// with their reasons, for the test that every other route is one.
func MCPToolExclusions() map[string]string { return toolExclusions }

// MCPSpecToolNames exposes the tool names spec §4.11 gives, by route.
func MCPSpecToolNames() map[string]string { return specToolNames }

// MCPToolName exposes how a route's tool is named.
func MCPToolName(method, path, operationID string) string {
	return toolName(Route{Method: method, Path: path}, operationID)
}
