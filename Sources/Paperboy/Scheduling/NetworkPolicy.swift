import Foundation

/// The network the machine uses now, as a ``NetworkMonitor`` sees it.
public struct NetworkStatus: Sendable, Hashable, Codable, CustomStringConvertible {
    /// The class of the interface carrying the default route.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case wired, wifi, cellular, other
        /// No default route: nothing can be downloaded.
        case none
    }

    /// The class of the default-route interface.
    public var kind: Kind
    /// The interface name, such as `eth0` or `wlan0`.
    public var interface: String?
    /// Metered: traffic costs money or counts against a cap.
    public var isExpensive: Bool
    /// Low-data mode or a constrained link.
    public var isConstrained: Bool
    /// Roaming away from the home network.
    public var isRoaming: Bool

    /// Creates a status.
    public init(kind: Kind, interface: String? = nil, isExpensive: Bool = false, isConstrained: Bool = false, isRoaming: Bool = false) {
        self.kind = kind
        self.interface = interface
        self.isExpensive = isExpensive
        self.isConstrained = isConstrained
        self.isRoaming = isRoaming
    }

    /// Parses an override such as `cellular,expensive` or `wifi` (`PAPERBOY_NETWORK`, `[network] assume`).
    ///
    /// - Throws: ``LibraryError`` `.invalidRequest` naming the unknown word.
    public static func parse(_ text: String) throws(LibraryError) -> NetworkStatus {
        var status = NetworkStatus(kind: .other)
        var sawKind = false
        for word in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces).lowercased() }) where !word.isEmpty {
            if let kind = Kind(rawValue: word) {
                guard !sawKind else {
                    throw LibraryError(.invalidRequest, "network '\(text)' names two classes; use one of wired, wifi, cellular, other, none")
                }
                status.kind = kind
                sawKind = true
            } else if word == "expensive" || word == "metered" {
                status.isExpensive = true
            } else if word == "constrained" {
                status.isConstrained = true
            } else if word == "roaming" {
                status.isRoaming = true
            } else {
                throw LibraryError(.invalidRequest, "unknown network word '\(word)' in '\(text)'; expected a class (wired, wifi, cellular, other, none) and attributes (expensive, constrained, roaming)")
            }
        }
        return status
    }

    public var description: String {
        var words = [kind.rawValue]
        if let interface { words[0] += " (\(interface))" }
        if isExpensive { words.append("expensive") }
        if isConstrained { words.append("constrained") }
        if isRoaming { words.append("roaming") }
        return words.joined(separator: ", ")
    }
}

/// Which networks a transfer may use.
public struct NetworkPolicy: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Interface classes allowed.
    public var allowedKinds: Set<NetworkStatus.Kind>
    /// Whether metered networks may be used.
    public var allowsExpensive: Bool
    /// Whether constrained networks may be used.
    public var allowsConstrained: Bool
    /// Whether roaming networks may be used.
    public var allowsRoaming: Bool

    /// Creates a policy.
    public init(allowedKinds: Set<NetworkStatus.Kind> = [.wired, .wifi, .cellular, .other],
                allowsExpensive: Bool = true, allowsConstrained: Bool = true, allowsRoaming: Bool = true) {
        self.allowedKinds = allowedKinds
        self.allowsExpensive = allowsExpensive
        self.allowsConstrained = allowsConstrained
        self.allowsRoaming = allowsRoaming
    }

    /// Any network (the foreground default).
    public static let any = NetworkPolicy()

    /// Unmetered networks only: no cellular, nothing expensive or roaming (the background
    /// default, after NewsstandKit's "Wi-Fi only in the background").
    public static let unmeteredOnly = NetworkPolicy(
        allowedKinds: [.wired, .wifi, .other], allowsExpensive: false, allowsConstrained: true, allowsRoaming: false)

    /// Whether a transfer may run on `status`.
    public func allows(_ status: NetworkStatus) -> Bool {
        status.kind != .none && allowedKinds.contains(status.kind)
            && (allowsExpensive || !status.isExpensive)
            && (allowsConstrained || !status.isConstrained)
            && (allowsRoaming || !status.isRoaming)
    }

    /// This policy with a request's overrides applied.
    public func applying(_ override: NetworkPolicyOverride?) -> NetworkPolicy {
        guard let override else { return self }
        var policy = self
        if let kinds = override.allowedKinds { policy.allowedKinds = kinds }
        if let value = override.allowsExpensive { policy.allowsExpensive = value }
        if let value = override.allowsConstrained { policy.allowsConstrained = value }
        if let value = override.allowsRoaming { policy.allowsRoaming = value }
        return policy
    }

    public var description: String {
        var parts = [allowedKinds.map(\.rawValue).sorted().joined(separator: "/")]
        if !allowsExpensive { parts.append("not expensive") }
        if !allowsConstrained { parts.append("not constrained") }
        if !allowsRoaming { parts.append("not roaming") }
        return parts.joined(separator: ", ")
    }
}

/// Per-request changes to the library's default ``NetworkPolicy``; `nil` fields keep the default.
public struct NetworkPolicyOverride: Sendable, Hashable, Codable {
    public var allowedKinds: Set<NetworkStatus.Kind>?
    public var allowsExpensive: Bool?
    public var allowsConstrained: Bool?
    public var allowsRoaming: Bool?

    /// Creates an override.
    public init(allowedKinds: Set<NetworkStatus.Kind>? = nil, allowsExpensive: Bool? = nil,
                allowsConstrained: Bool? = nil, allowsRoaming: Bool? = nil) {
        self.allowedKinds = allowedKinds
        self.allowsExpensive = allowsExpensive
        self.allowsConstrained = allowsConstrained
        self.allowsRoaming = allowsRoaming
    }
}
