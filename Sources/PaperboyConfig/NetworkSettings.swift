import Foundation

/// The `[network]` section: which networks transfers may use.
public struct NetworkSettings: Sendable, Equatable {
    /// A kind of network interface.
    public enum InterfaceClass: String, Sendable, CaseIterable, Hashable {
        /// Ethernet and other cables.
        case wired
        /// Wi-Fi.
        case wifi
        /// A mobile data connection.
        case cellular
        /// Anything else (VPNs, tunnels, unknown).
        case other
    }

    /// Properties of a network beyond its class.
    public struct Attributes: OptionSet, Sendable, Hashable {
        /// The attribute bits.
        public let rawValue: Int
        /// Creates attributes from bits.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// Metered: every byte costs.
        public static let expensive = Attributes(rawValue: 1 << 0)
        /// Low-data mode or otherwise restricted.
        public static let constrained = Attributes(rawValue: 1 << 1)
        /// On a foreign mobile network.
        public static let roaming = Attributes(rawValue: 1 << 2)

        static let names: [(String, Attributes)] = [
            ("expensive", .expensive), ("constrained", .constrained), ("roaming", .roaming),
        ]
    }

    /// A network stated by the operator instead of detected (`assume = "cellular,expensive"`).
    public struct Assumption: Sendable, Equatable {
        /// The interface class.
        public var interfaceClass: InterfaceClass
        /// The attributes.
        public var attributes: Attributes

        /// Creates an assumption.
        public init(interfaceClass: InterfaceClass, attributes: Attributes = []) {
            self.interfaceClass = interfaceClass
            self.attributes = attributes
        }

        /// Parses a comma-separated class and attributes, such as `"wifi"` or `"cellular,expensive,roaming"`.
        ///
        /// - Throws: ``ConfigValueError`` for an unknown word, no class or two classes.
        public static func parse(_ text: String) throws(ConfigValueError) -> Assumption {
            var found: InterfaceClass?
            var attributes: Attributes = []
            for word in text.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) {
                if let kind = InterfaceClass(rawValue: word) {
                    guard found == nil else {
                        throw ConfigValueError("expected one network class, got \"\(text)\"")
                    }
                    found = kind
                } else if let attribute = Attributes.names.first(where: { $0.0 == word })?.1 {
                    attributes.insert(attribute)
                } else {
                    throw ConfigValueError(
                        "unknown network word \"\(word)\" in \"\(text)\"; expected one of wired, wifi, cellular, other"
                            + " and any of expensive, constrained, roaming"
                    )
                }
            }
            guard let found else {
                throw ConfigValueError("expected a network class (wired, wifi, cellular or other) in \"\(text)\"")
            }
            return Assumption(interfaceClass: found, attributes: attributes)
        }
    }

    /// The network to assume instead of detecting it (`assume`); `nil` (the default) detects.
    public var assume: Assumption?
    /// The interface classes transfers may use (`allowed`); all by default.
    public var allowed: Set<InterfaceClass>
    /// Whether metered networks may be used (`allow_expensive`).
    ///
    /// Defaults to `true` in foreground mode and `false` in background mode.
    public var allowExpensive: Bool
    /// Whether constrained networks may be used (`allow_constrained`), default `true`.
    public var allowConstrained: Bool

    /// Creates network settings; the defaults are those of an absent `[network]` section in foreground mode.
    public init(
        assume: Assumption? = nil,
        allowed: Set<InterfaceClass> = Set(InterfaceClass.allCases),
        allowExpensive: Bool = true,
        allowConstrained: Bool = true
    ) {
        self.assume = assume
        self.allowed = allowed
        self.allowExpensive = allowExpensive
        self.allowConstrained = allowConstrained
    }
}
