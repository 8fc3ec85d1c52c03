import Foundation

/// Which proxy a request goes through, decided the way libcurl decides it from the environment,
/// so that a proxy's challenge can name the proxy (and be answered with the proxy's credentials,
/// never the origin's).
///
/// The transport hands the proxy found here to libcurl itself (`CURLOPT_PROXY`): the proxy a
/// challenge names is the proxy that receives the answer.
enum HTTPProxy {
    /// The proxy for `url`: `configured` if set (an empty string: none; `no_proxy` does not
    /// apply), else `http_proxy` for http (lowercase only, as libcurl reads it), `https_proxy` or
    /// `HTTPS_PROXY` for https, then `all_proxy` or `ALL_PROXY`; `nil` when none applies or
    /// `no_proxy` (`NO_PROXY`) names the host.
    ///
    /// The text is returned as written (it may hold `user:password@`, which libcurl uses).
    static func proxy(for url: URL, configured: String?, environment: (String) -> String? = variable) -> String? {
        if let configured { return configured.isEmpty ? nil : configured }
        let scheme = url.scheme?.lowercased() ?? "http"
        var names = ["\(scheme)_proxy"]
        if scheme != "http" { names.append("\(scheme.uppercased())_PROXY") }
        names += ["all_proxy", "ALL_PROXY"]
        guard let chosen = names.lazy.compactMap(environment).first(where: { !$0.isEmpty }) else { return nil }
        let noProxy = environment("no_proxy") ?? environment("NO_PROXY") ?? ""
        if let host = url.host, bypasses(host: host, noProxy: noProxy) { return nil }
        return chosen
    }

    /// One environment variable, read with `getenv` (per request: cheaper than copying the
    /// whole environment into a dictionary).
    static func variable(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// The proxy's URL for a challenge: a scheme added when the text has none (libcurl assumes
    /// `http://`), user and password removed.
    static func url(of proxy: String) -> URL? {
        let text = proxy.contains("://") ? proxy : "http://" + proxy
        return URL(string: text)?.redacted
    }

    /// Whether `noProxy` (comma-separated host names, `.suffix` or `*`) names `host`.
    static func bypasses(host: String, noProxy: String) -> Bool {
        let host = host.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "[]."))
        for entry in noProxy.split(separator: ",") {
            var name = entry.trimmingCharacters(in: .whitespaces).lowercased()
            if name == "*" { return true }
            while name.hasPrefix(".") { name.removeFirst() }
            name = name.trimmingCharacters(in: CharacterSet(charactersIn: "[]"))
            if !name.isEmpty, host == name || host.hasSuffix("." + name) { return true }
        }
        return false
    }
}
