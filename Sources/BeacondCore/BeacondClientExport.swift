// The daemon is built over the client library's protocol model (the messages it sends are the ones
// clients read), so whoever imports BeacondCore sees BeacondClient too, as NIOPosix users see NIOCore.
@_exported import BeacondClient
