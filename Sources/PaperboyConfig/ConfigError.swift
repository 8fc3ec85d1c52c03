import Foundation

/// An error in a configuration file, located by file, line and key like a compiler diagnostic.
///
/// The ``description`` reads `paperboy.toml:14: issues[0].assets[0].sha256: expected 64
/// hexadecimal digits, got "abc"`. Messages name files, keys and environment variables but
/// never the value of a secret.
public struct ConfigError: Error, CustomStringConvertible, Sendable {
    /// A kind of configuration error; new codes may be added without breaking callers.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's name, such as `unknownKey`.
        public let name: String

        /// Creates a code with a name.
        public init(_ name: String) { self.name = name }

        /// The code's name.
        public var description: String { name }

        /// The file could not be read or is not UTF-8.
        public static let unreadable = Code("unreadable")
        /// The file is not valid TOML.
        public static let syntax = Code("syntax")
        /// A key that Paperboy does not know.
        public static let unknownKey = Code("unknownKey")
        /// A table that Paperboy does not know.
        public static let unknownTable = Code("unknownTable")
        /// A value of the wrong TOML type.
        public static let typeMismatch = Code("typeMismatch")
        /// A value of the right type that does not make sense.
        public static let invalidValue = Code("invalidValue")
        /// A required key is absent.
        public static let missingKey = Code("missingKey")
        /// Two entries that must be unique share a name.
        public static let duplicate = Code("duplicate")
        /// A secret names an environment variable that is not set.
        public static let missingEnvironmentVariable = Code("missingEnvironmentVariable")
        /// A secret names a file that does not exist or cannot be read.
        public static let missingSecretFile = Code("missingSecretFile")
    }

    /// What kind of error this is.
    public var code: Code
    /// The configuration file (or secret file) the error is about.
    public var file: URL
    /// The 1-based line the error is about, when known.
    public var line: Int?
    /// The 1-based column, known only for TOML syntax errors.
    public var column: Int?
    /// The dotted key path, such as `issues[2].assets[0].sha256`.
    public var key: String?
    /// What is wrong, in words a person can act on.
    public var message: String
    /// The key or value the author probably meant, for typos.
    public var suggestion: String?
    /// The error reported by the layer below (TOML parser, file system), if any.
    public var underlying: (any Error)?

    /// Creates a configuration error.
    public init(
        code: Code,
        file: URL,
        line: Int? = nil,
        column: Int? = nil,
        key: String? = nil,
        message: String,
        suggestion: String? = nil,
        underlying: (any Error)? = nil
    ) {
        self.code = code
        self.file = file
        self.line = line
        self.column = column
        self.key = key
        self.message = message
        self.suggestion = suggestion
        self.underlying = underlying
    }

    /// A compiler-style diagnostic: `file:line[:column]: [key: ]message[; did you mean 'x'?]`.
    public var description: String {
        var location = Self.displayPath(of: file)
        if let line {
            location += ":\(line)"
            if let column { location += ":\(column)" }
        }
        var text = location + ": "
        // These messages already quote the key.
        if let key, code != .unknownKey, code != .unknownTable, code != .missingKey {
            text += key + ": "
        }
        text += message
        if let suggestion {
            text += "; did you mean '\(suggestion)'?"
        }
        return text
    }

    /// The path as a person would type it: relative when inside the current directory.
    static func displayPath(of url: URL) -> String {
        let path = url.standardizedFileURL.path
        let cwd = FileManager.default.currentDirectoryPath
        if !cwd.isEmpty, path.hasPrefix(cwd.hasSuffix("/") ? cwd : cwd + "/") {
            return String(path.dropFirst(cwd.count + (cwd.hasSuffix("/") ? 0 : 1)))
        }
        return path
    }
}
