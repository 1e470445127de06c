package api

import "github.com/modelcontextprotocol/go-sdk/mcp"

// MCPServer exposes the MCP server so a test can add a tool that reports
// what a tool handler learns about its caller.
func (s *Server) MCPServer() *mcp.Server { return s.mcpServer }

// MCPPrincipal exposes how a tool handler finds its caller.
var MCPPrincipal = mcpPrincipal
