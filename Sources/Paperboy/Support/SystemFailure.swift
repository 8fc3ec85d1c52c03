#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The one place a system call's `errno` becomes text, for every module of the package.
package enum SystemFailure {
    /// The system's reason for the failure `code` (`strerror`), such as "No such file or directory".
    package static func reason(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }

    /// What failed, on which path, and the system's reason: `message("cannot open", "/srv/lib")`
    /// is "cannot open /srv/lib: Permission denied".
    ///
    /// - Parameters:
    ///   - what: what was being done ("cannot open", "cannot write").
    ///   - path: the file or folder concerned, when there is one.
    ///   - code: the `errno` of the failure; read it before anything that could change it.
    package static func message(_ what: String, _ path: String? = nil, code: Int32 = errno) -> String {
        let text = reason(code)
        guard let path else { return "\(what): \(text)" }
        return "\(what) \(path): \(text)"
    }
}
