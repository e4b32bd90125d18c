import Glibc

/// The system's text for an errno value ("No such file or directory").
package func errnoText(_ code: Int32) -> String {
    guard let text = strerror(code) else { return "errno \(code)" }
    return String(cString: text)
}
