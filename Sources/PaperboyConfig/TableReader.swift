import Foundation
import Paperboy
import TOMLKit

/// Everything a table needs to report errors: the file, the source map, the environment.
struct DecodeContext {
    let fileURL: URL
    let sourceMap: ConfigSourceMap
    let environment: [String: String]
    let paths: PathResolution

    /// The line of a key path or its nearest ancestor; line 1 when nothing is known.
    func line(for keyPath: String) -> Int {
        sourceMap.line(for: keyPath) ?? 1
    }

    func error(
        _ code: ConfigError.Code, at keyPath: String, _ message: String, suggestion: String? = nil
    ) -> ConfigError {
        ConfigError(
            code: code, file: fileURL, line: line(for: keyPath),
            key: keyPath.isEmpty ? nil : keyPath, message: message, suggestion: suggestion
        )
    }
}

/// A TOML table being decoded, with its key path for errors.
struct TableReader {
    let table: TOMLTable
    /// The key path of this table: empty for the document, `scheduler`, `issues[0]`.
    let path: String
    let context: DecodeContext
    /// The table's keys, read once: a key the table does not hold is answered without asking
    /// TOMLKit (a lookup there crosses into C++; an asset reads a dozen keys and holds one or two).
    private let keys: Set<String>

    init(table: TOMLTable, path: String, context: DecodeContext) {
        self.table = table
        self.path = path
        self.context = context
        keys = Set(table.keys)
    }

    /// How the table is written, for messages: `[scheduler]`, `[[issues.assets]]`, `the top level`.
    var sectionName: String {
        if path.isEmpty { return "the top level" }
        let schemaPath = Self.schemaPath(path)
        return path.hasSuffix("]") ? "[[\(schemaPath)]]" : "[\(schemaPath)]"
    }

    func keyPath(_ key: String) -> String {
        path.isEmpty ? key : path + "." + key
    }

    func value(_ key: String) -> (any TOMLValueConvertible)? {
        guard keys.contains(key) else { return nil }
        return table[key]
    }

    func error(_ code: ConfigError.Code, _ key: String?, _ message: String, suggestion: String? = nil) -> ConfigError {
        context.error(code, at: key.map(keyPath) ?? path, message, suggestion: suggestion)
    }

    func invalid(_ key: String, _ error: ConfigValueError) -> ConfigError {
        self.error(.invalidValue, key, error.message)
    }

    func typeMismatch(_ key: String, expected: String, got value: any TOMLValueConvertible) -> ConfigError {
        error(.typeMismatch, key, "expected \(expected), got \(Self.describe(value))")
    }

    /// Rejects keys outside `known`, reporting the one written first, with a suggestion.
    func checkKnownKeys(_ known: [String]) throws(ConfigError) {
        let unknown = keys.filter { !known.contains($0) }
        guard !unknown.isEmpty else { return }
        let first = unknown.min { context.line(for: keyPath($0)) < context.line(for: keyPath($1)) }!
        let suggestion = EditDistance.suggestion(for: first, among: known)
        if let inline = ["password", "token", "passphrase"].first(where: { $0 == first }), known.contains(inline + "_env") {
            throw error(
                .invalidValue, first,
                "secrets are never written inline; use '\(inline)_env' (an environment variable) or '\(inline)_file'"
            )
        }
        if value(first)?.type == .table || value(first)?.array?.first?.type == .table {
            throw error(.unknownTable, first, "unknown table '\(keyPath(first))'", suggestion: suggestion)
        }
        throw error(
            .unknownKey, first, "unknown key '\(first)' \(path.isEmpty ? "at" : "in") \(sectionName)", suggestion: suggestion
        )
    }

    func string(_ key: String) throws(ConfigError) -> String? {
        guard let value = value(key) else { return nil }
        guard let string = value.string else { throw typeMismatch(key, expected: "a string", got: value) }
        return string
    }

    func int(_ key: String) throws(ConfigError) -> Int? {
        guard let value = value(key) else { return nil }
        guard let int = value.int else { throw typeMismatch(key, expected: "an integer", got: value) }
        return int
    }

    func positiveInt(_ key: String) throws(ConfigError) -> Int? {
        guard let int = try int(key) else { return nil }
        guard int >= 1 else { throw error(.invalidValue, key, "expected an integer of at least 1, got \(int)") }
        return int
    }

    func bool(_ key: String) throws(ConfigError) -> Bool? {
        guard let value = value(key) else { return nil }
        guard let bool = value.bool else { throw typeMismatch(key, expected: "a boolean (true or false)", got: value) }
        return bool
    }

    /// An array of strings; `nonEmpty` rejects `[]`.
    func strings(_ key: String, nonEmpty: Bool = false) throws(ConfigError) -> [String]? {
        guard let value = value(key) else { return nil }
        guard let array = value.array else { throw typeMismatch(key, expected: "an array of strings", got: value) }
        var strings: [String] = []
        for index in 0..<array.count {
            let element = array[index]
            guard let string = element.string else {
                throw context.error(
                    .typeMismatch, at: keyPath(key) + "[\(index)]", "expected a string, got \(Self.describe(element))"
                )
            }
            strings.append(string)
        }
        if nonEmpty && strings.isEmpty {
            throw error(.invalidValue, key, "expected a non-empty array of strings")
        }
        return strings
    }

    /// Transport options: a table of strings (`options = { mode = "passive" }`), checked
    /// against ``TransportOptions``; errors name the option's own key.
    func options(_ key: String) throws(ConfigError) -> [String: String] {
        guard let value = value(key) else { return [:] }
        guard let table = value.table else { throw typeMismatch(key, expected: "a table of strings ({ name = \"value\" })", got: value) }
        if let problem = TransportOptions.countProblem(table.count) { throw error(.invalidValue, key, problem) }
        var options: [String: String] = [:]
        for (name, element) in table {
            guard let string = element.string else {
                throw context.error(.typeMismatch, at: keyPath(key) + "." + name, "expected a string, got \(Self.describe(element))")
            }
            if let problem = TransportOptions.problem(key: name, value: string) {
                throw context.error(.invalidValue, at: keyPath(key) + "." + name, problem)
            }
            options[name] = string
        }
        return options
    }

    func duration(_ key: String) throws(ConfigError) -> Duration? {
        guard let text = try string(key) else { return nil }
        do {
            return try DurationParser.parse(text)
        } catch {
            throw invalid(key, error)
        }
    }

    /// A duration within `range`, such as a feed's `refresh`.
    func duration(_ key: String, in range: ClosedRange<Duration>) throws(ConfigError) -> Duration? {
        guard let duration = try duration(key) else { return nil }
        guard range.contains(duration) else {
            throw error(
                .invalidValue, key,
                "expected a duration from \(DurationParser.string(for: range.lowerBound)) to "
                    + "\(DurationParser.string(for: range.upperBound)), got \(DurationParser.string(for: duration))")
        }
        return duration
    }

    /// A rate: a string such as `"10MB/s"` or `"off"`, or an integer of bytes per second.
    /// The outer optional is the key's absence, the inner one `off`.
    func rate(_ key: String) throws(ConfigError) -> ByteRate?? {
        guard let value = value(key) else { return nil }
        do {
            if let int = value.int { return .some(try ByteRate.parse(integer: int)) }
            if let text = value.string { return .some(try ByteRate.parse(text)) }
        } catch {
            throw invalid(key, error)
        }
        throw typeMismatch(key, expected: "a rate such as \"10MB/s\" or \"off\"", got: value)
    }

    /// A size in bytes, at least 1 and at most 2^62 (``ByteCount``): a string such as `"20GiB"`
    /// or `"500MB"` (``ByteCount/init(size:door:)``, the grammar of `paperboy purge --budget`
    /// too), or an integer of bytes.
    func size(_ key: String) throws(ConfigError) -> Int64? {
        guard let value = value(key) else { return nil }
        guard value.int != nil || value.string != nil else {
            throw typeMismatch(key, expected: "a size such as \"20GiB\"", got: value)
        }
        let size: ByteCount
        do throws(BoundaryError) {
            if let int = value.int {
                size = try ByteCount(int, door: keyPath(key))
            } else {
                size = try ByteCount(size: value.string ?? "", door: keyPath(key))
            }
        } catch {
            throw self.error(.invalidValue, key, error.problem)
        }
        guard size.bytes >= 1 else { throw error(.invalidValue, key, "expected a size of at least 1 byte, got \(size.bytes)") }
        return size.bytes
    }

    /// A string that must be one of an enum's raw values.
    func choice<E: RawRepresentable & CaseIterable>(_ key: String, of type: E.Type) throws(ConfigError) -> E?
    where E.RawValue == String {
        guard let text = try string(key) else { return nil }
        if let choice = E(rawValue: text) { return choice }
        let names = E.allCases.map(\.rawValue)
        let list = names.count == 2
            ? "\"\(names[0])\" or \"\(names[1])\""
            : names.map { "\"\($0)\"" }.joined(separator: ", ")
        throw error(
            .invalidValue, key, "expected \(list), got \"\(text)\"",
            suggestion: EditDistance.suggestion(for: text, among: names)
        )
    }

    /// A nested table such as `[scheduler]`.
    func section(_ key: String) throws(ConfigError) -> TableReader? {
        guard let value = value(key) else { return nil }
        guard let table = value.table else { throw typeMismatch(key, expected: "a table ([\(key)])", got: value) }
        return TableReader(table: table, path: keyPath(key), context: context)
    }

    /// An array of tables such as `[[issues]]`.
    func tableArray(_ key: String) throws(ConfigError) -> [TableReader] {
        guard let value = value(key) else { return [] }
        let header = "an array of tables ([[\(Self.schemaPath(keyPath(key)))]])"
        guard let array = value.array else { throw typeMismatch(key, expected: header, got: value) }
        var readers: [TableReader] = []
        for index in 0..<array.count {
            let elementPath = keyPath(key) + "[\(index)]"
            guard let table = array[index].table else {
                throw context.error(.typeMismatch, at: elementPath, "expected a table, got \(Self.describe(array[index]))")
            }
            readers.append(TableReader(table: table, path: elementPath, context: context))
        }
        return readers
    }

    /// A value that must be present; reported on the table's own line when absent.
    func require<T>(_ value: T?, _ key: String) throws(ConfigError) -> T {
        guard let value else {
            // The path is absent, so its line falls back to the table's header.
            throw error(.missingKey, key, "missing required key '\(key)' in \(sectionName)")
        }
        return value
    }

    /// A key path without array indices: `issues[0].assets[1]` → `issues.assets`.
    /// Scanned by hand: a regular expression here loaded ICU's regex engine on every run.
    static func schemaPath(_ path: String) -> String {
        var result = ""
        var rest = Substring(path)
        while let open = rest.firstIndex(of: "[") {
            let digits = rest[rest.index(after: open)...].prefix(while: { $0 >= "0" && $0 <= "9" })
            if !digits.isEmpty, digits.endIndex < rest.endIndex, rest[digits.endIndex] == "]" {
                result += rest[..<open]
                rest = rest[rest.index(after: digits.endIndex)...]
            } else {
                result += rest[...open]
                rest = rest[rest.index(after: open)...]
            }
        }
        return result + rest
    }

    static func describe(_ value: any TOMLValueConvertible) -> String {
        switch value.type {
        case .table: "a table"
        case .array: "an array"
        case .string: "a string"
        case .int: "an integer"
        case .double: "a floating-point number"
        case .bool: "a boolean"
        case .date: "a date"
        case .time: "a time"
        case .dateTime: "a date-time"
        }
    }
}
