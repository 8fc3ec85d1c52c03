import Foundation
import Paperboy

/// A publisher's catalog: the JSON list of issues a `[[feeds]]` entry points at.
///
/// The schema is in `docs/Publishers.md`. ``parse(_:feed:url:)`` validates the whole document
/// and resolves relative URLs against the catalog's own URL; unknown keys are ignored, so
/// publishers may add their own (prices, descriptions).
public struct Catalog: Sendable, Equatable {
    /// The most mirrors an asset of a catalog may list.
    public static let maxMirrors = 16

    /// One issue of the catalog.
    public struct Issue: Sendable, Equatable {
        /// The unique name; also the issue's folder name.
        public var name: String
        /// The publication date (midnight UTC for a plain date).
        public var date: Date
        /// The human title, if any.
        public var title: String?
        /// The cover image, if any (its ``Asset/role`` is `.cover`).
        public var cover: Asset?
        /// The issue's content files, in catalog order.
        public var assets: [Asset]

        /// The cover first (so a shelf can show it early), then the content.
        public var allAssets: [Asset] { (cover.map { [$0] } ?? []) + assets }

        /// The issue as a configuration entry, ready for the same handling as `[[issues]]`.
        public var entry: IssueEntry {
            IssueEntry(name: name, date: date, assets: allAssets.map(\.entry))
        }
    }

    /// One file of an issue.
    public struct Asset: Sendable, Equatable {
        /// Where to download it from (absolute: relative URLs are resolved).
        public var url: URL
        /// The expected SHA-256 in lowercase hexadecimal, if given.
        public var sha256: String?
        /// The size in bytes the publisher announced, if given.
        public var size: Int64?
        /// Where the file goes inside the issue folder (default: the URL's last path component).
        public var path: String
        /// How to unpack the file, if at all.
        public var unpack: AssetEntry.Unpack?
        /// Content or cover.
        public var role: AssetEntry.Role
        /// Higher first.
        public var priority: Int
        /// Transport options (`options`, an object of strings), checked like the configuration's.
        public var options: [String: String] = [:]
        /// The file's chunk index (`"index": "URL"`, or `"indexed": true` for the URL + `.pbidx`).
        public var index: URL?

        /// Other URLs serving the same bytes (`mirrors`, at most ``Catalog/maxMirrors``), each
        /// resolved and checked as ``url`` is.
        public var mirrors: [URL] = []

        /// The asset as a configuration entry.
        public var entry: AssetEntry {
            var entry = AssetEntry(url: url, sha256: sha256, path: path, unpack: unpack, role: role, priority: priority, options: options)
            entry.index = index
            entry.mirrors = mirrors
            return entry
        }
    }

    /// What a catalog may ask for: it comes from a publisher, not from the configuration's author.
    public struct Limits: Sendable, Equatable {
        /// The default of ``maxAssets``: more than a daily's ten-year archive with covers.
        public static let defaultMaxAssets = 10_000

        /// The most assets (covers included) the whole catalog may list.
        public var maxAssets: Int
        /// Schemes assets may use besides `http`, `https` and the catalog's own origin
        /// (lowercased). Without them a catalog cannot point, say, `sftp://` at any host the
        /// user's SSH agent can reach. Local files are allowed only in a local catalog.
        public var allowedSchemes: Set<String>

        /// Creates limits.
        public init(maxAssets: Int = defaultMaxAssets, allowedSchemes: Set<String> = []) {
            self.maxAssets = maxAssets
            self.allowedSchemes = allowedSchemes
        }

        /// What the JSON reader lets in: ``JSONReader/Limits/catalog``, arrays of at most
        /// ``maxAssets`` elements.
        var json: JSONReader.Limits {
            var limits = JSONReader.Limits.catalog
            limits.maxElements = max(1, maxAssets)
            return limits
        }
    }

    /// The issues, in catalog order.
    public var issues: [Issue]

    /// Creates a catalog from values.
    public init(issues: [Issue]) {
        self.issues = issues
    }

    /// Parses and validates a catalog.
    ///
    /// - Parameters:
    ///   - data: the JSON document.
    ///   - feed: the feed's name, for error messages.
    ///   - url: where the catalog was fetched from: relative URLs resolve against it.
    ///   - limits: how many assets it may list and which URL schemes they may use.
    /// - Throws: ``CatalogError`` naming the feed, its URL and the JSON path of the first problem.
    public static func parse(_ data: Data, feed: String, url: URL, limits: Limits = Limits()) throws(CatalogError) -> Catalog {
        let root: JSON
        do {
            root = try JSONReader("catalog", limits: limits.json).decode(JSON.self, from: data)
        } catch let error as JSONInputError {
            // An array longer than max_assets cannot be a list of this catalog's issues or assets.
            let hint = error.kind == .elements ? " (raise max_assets of this [[feeds]] entry if that is expected)" : ""
            throw CatalogError(feed: feed, url: url, path: nil, message: error.description + hint)
        } catch {
            throw CatalogError(feed: feed, url: url, path: nil, message: "not valid JSON (\(Self.describe(error)))")
        }
        var reader = CatalogReader(feed: feed, url: url, limits: limits)
        return try reader.catalog(root)
    }

    /// A catalog date: `YYYY-MM-DD` (midnight UTC) or an ISO 8601 date-time; `nil` otherwise.
    /// Not range-checked: ``LibraryDate/problem(with:)`` says whether the library can record it
    /// (the catalog reader refuses what it cannot).
    public static func date(from text: String) -> Date? {
        LibraryDate.parse(text)
    }

    private static func describe(_ error: any Error) -> String {
        if case DecodingError.dataCorrupted(let context)? = error as? DecodingError {
            return (context.underlyingError as NSError?)?.userInfo[NSDebugDescriptionErrorKey] as? String
                ?? context.debugDescription
        }
        return "\(error)"
    }
}

/// A catalog that cannot be used: which feed, where it came from, where in the JSON, and why.
public struct CatalogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The feed's name.
    public var feed: String
    /// The catalog's URL (shown without a password).
    public var url: URL
    /// The JSON path of the problem, such as `issues[2].assets[0].sha256`; `nil` for the whole document.
    public var path: String?
    /// What is wrong.
    public var message: String

    /// Creates an error.
    public init(feed: String, url: URL, path: String?, message: String) {
        self.feed = feed
        self.url = url
        self.path = path
        self.message = message
    }

    /// `feed 'daily' (https://…/catalog.json): issues[2].assets[0].sha256: expected 64 hex digits`.
    /// Control and bidi characters quoted from the catalog are escaped (`\u{1B}`): the text
    /// reaches terminals, where an escape sequence or a reordering mark would act.
    public var description: String {
        TerminalText.escape("feed '\(feed)' (\(Self.redacted(url))): " + (path.map { "\($0): " } ?? "") + message)
    }

    static func redacted(_ url: URL) -> String {
        guard url.password != nil, var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            return url.isFileURL ? url.path : url.absoluteString
        }
        components.password = nil
        return components.string ?? url.absoluteString
    }
}

/// A JSON value that keeps booleans and numbers apart (JSONSerialization on Linux does not);
/// decoded only from JSON the reader checked.
enum JSON: Decodable, Equatable {
    case null, bool(Bool), integer(Int64), number(Double), string(String), array([JSON]), object([String: JSON])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() { self = .null }
        else if let value = try? container.decode(Bool.self) { self = .bool(value) }
        else if let value = try? container.decode(Int64.self) { self = .integer(value) }
        else if let value = try? container.decode(Double.self) { self = .number(value) }
        else if let value = try? container.decode(String.self) { self = .string(value) }
        else if let value = try? container.decode([JSON].self) { self = .array(value) }
        else { self = .object(try container.decode([String: JSON].self)) }
    }

    var kind: String {
        switch self {
        case .null: "null"
        case .bool: "a boolean"
        case .integer, .number: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// Walks a catalog document, keeping the JSON path for error messages.
private struct CatalogReader {
    let feed: String
    let url: URL
    let limits: Catalog.Limits
    /// Assets read so far, covers included.
    var assetCount = 0

    func fail(_ path: String?, _ message: String) -> CatalogError {
        CatalogError(feed: feed, url: url, path: path, message: message)
    }

    mutating func catalog(_ root: JSON) throws(CatalogError) -> Catalog {
        guard case .object(let object) = root else {
            throw fail(nil, "expected an object with an \"issues\" array, got \(root.kind)")
        }
        guard let issuesValue = object["issues"] else { throw fail("issues", "missing (the list of issues)") }
        guard case .array(let list) = issuesValue else { throw fail("issues", "expected an array, got \(issuesValue.kind)") }
        var issues: [Catalog.Issue] = []
        var seen: [String: Int] = [:]
        for (index, value) in list.enumerated() {
            // Counted before the assets are read: a hostile catalog is refused without reading them.
            if case .object(let object) = value {
                if case .array(let assets)? = object["assets"] { assetCount += assets.count }
                if let cover = object["cover"], cover != .null { assetCount += 1 }
            }
            if assetCount > limits.maxAssets {
                throw fail("issues[\(index)]", "the catalog lists more than \(limits.maxAssets) assets, the limit "
                           + "(raise max_assets of this [[feeds]] entry if that is expected)")
            }
            let issue = try self.issue(value, path: "issues[\(index)]")
            if let first = seen[issue.name] {
                throw fail("issues[\(index)].name", "duplicate issue name '\(issue.name)' (also issues[\(first)])")
            }
            seen[issue.name] = index
            issues.append(issue)
        }
        return Catalog(issues: issues)
    }

    func issue(_ value: JSON, path: String) throws(CatalogError) -> Catalog.Issue {
        guard case .object(let object) = value else { throw fail(path, "expected an object, got \(value.kind)") }
        let name = try requiredString(object, "name", path)
        if let problem = IssueName.problem(with: name) { throw fail("\(path).name", problem) }
        let date = try self.date(try requiredString(object, "date", path), path: "\(path).date")
        let title = try optionalString(object, "title", path)
        var cover: Catalog.Asset?
        if let coverValue = object["cover"], coverValue != .null {
            cover = try asset(coverValue, path: "\(path).cover", role: .cover)
        }
        var assets: [Catalog.Asset] = []
        switch object["assets"] {
        case nil, .null?:
            break
        case .array(let list)?:
            for (index, item) in list.enumerated() {
                assets.append(try asset(item, path: "\(path).assets[\(index)]", role: nil))
            }
        case let other?:
            throw fail("\(path).assets", "expected an array, got \(other.kind)")
        }
        if assets.isEmpty, cover == nil {
            throw fail("\(path).assets", "an issue needs at least one asset or a cover")
        }
        var labelled = assets.enumerated().map { ("\(path).assets[\($0.offset)]", $0.element) }
        if let cover { labelled.insert(("\(path).cover", cover), at: 0) }
        var paths: [String: String] = [:]
        for (label, asset) in labelled {
            if let other = paths[asset.path] {
                throw fail("\(label).path", "'\(asset.path)' is also the path of \(other)")
            }
            paths[asset.path] = label
        }
        return Catalog.Issue(name: name, date: date, title: title, cover: cover, assets: assets)
    }

    /// An asset object, or (for a cover) just its URL as a string.
    func asset(_ value: JSON, path: String, role fixedRole: AssetEntry.Role?) throws(CatalogError) -> Catalog.Asset {
        var object: [String: JSON]
        switch value {
        case .string where fixedRole == .cover:
            object = ["url": value]
        case .object(let fields):
            object = fields
        default:
            throw fail(path, "expected \(fixedRole == .cover ? "a URL string or an object" : "an object"), got \(value.kind)")
        }
        let urlText = try requiredString(object, "url", path)
        let resolved = try resolve(urlText, path: "\(path).url")
        var sha256: String?
        if let text = try optionalString(object, "sha256", path) {
            guard text.count == 64, text.allSatisfy(\.isHexDigit) else {
                throw fail("\(path).sha256", "expected 64 hex digits, got \(text.count) characters")
            }
            sha256 = text.lowercased()
        }
        let size = try byteCount(object["size"], "\(path).size")
        var unpack: AssetEntry.Unpack?
        if let text = try optionalString(object, "unpack", path) {
            guard let format = AssetEntry.Unpack(rawValue: text) else {
                throw fail("\(path).unpack", "unknown format '\(text)' (known: \(AssetEntry.Unpack.allCases.map(\.rawValue).joined(separator: ", ")))")
            }
            unpack = format
        }
        var role = fixedRole ?? .content
        if let text = try optionalString(object, "role", path) {
            guard let parsed = AssetEntry.Role(rawValue: text) else {
                throw fail("\(path).role", "unknown role '\(text)' (known: content, cover)")
            }
            if let fixedRole, parsed != fixedRole { throw fail("\(path).role", "a cover has the role 'cover'") }
            role = parsed
        }
        var priority = 0
        switch object["priority"] {
        case nil, .null?: break
        case .integer(let value)? where Int64(Int.min)...Int64(Int.max) ~= value: priority = Int(value)
        case let other?: throw fail("\(path).priority", "expected an integer, got \(describe(other))")
        }
        let destination = try optionalString(object, "path", path) ?? resolved.lastPathComponent
        if let problem = RelativePath.problem(with: destination) { throw fail("\(path).path", problem) }
        var asset = Catalog.Asset(url: resolved, sha256: sha256, size: size, path: destination, unpack: unpack, role: role,
                                  priority: priority, options: try options(object["options"], path: "\(path).options"))
        if let text = try optionalString(object, "index", path) {
            if object["indexed"] == .bool(false) { throw fail("\(path).indexed", "is false while 'index' names an index; remove one of them") }
            asset.index = try resolve(text, path: "\(path).index")
        } else {
            switch object["indexed"] {
            case nil, .null?, .bool(false)?: break
            case .bool(true)?: asset.index = ChunkIndex.url(besides: resolved)
            case let other?: throw fail("\(path).indexed", "expected true or false, got \(describe(other))")
            }
        }
        asset.mirrors = try mirrors(object["mirrors"], path: "\(path).mirrors")
        return asset
    }

    /// An asset's mirrors: an array of at most ``Catalog/maxMirrors`` URLs, each resolved as the
    /// asset's `url` is (``resolve(_:path:)``: the same schemes, no password, no local file).
    func mirrors(_ value: JSON?, path: String) throws(CatalogError) -> [URL] {
        switch value {
        case nil, .null?:
            return []
        case .array(let elements)?:
            guard elements.count <= Catalog.maxMirrors else {
                throw fail(path, "\(elements.count) mirrors; at most \(Catalog.maxMirrors) are read")
            }
            var mirrors: [URL] = []
            for (index, element) in elements.enumerated() {
                guard case .string(let text) = element else {
                    throw fail("\(path)[\(index)]", "expected a URL string, got \(describe(element))")
                }
                mirrors.append(try resolve(text, path: "\(path)[\(index)]"))
            }
            return mirrors
        case let other?:
            throw fail(path, "expected an array of URL strings, got \(describe(other))")
        }
    }

    /// An asset's transport options: an object of strings, within ``TransportOptions``' rules.
    func options(_ value: JSON?, path: String) throws(CatalogError) -> [String: String] {
        switch value {
        case nil, .null?:
            return [:]
        case .object(let object)?:
            if let problem = TransportOptions.countProblem(object.count) { throw fail(path, problem) }
            var options: [String: String] = [:]
            for (key, element) in object {
                guard case .string(let text) = element else { throw fail("\(path).\(key)", "expected a string, got \(element.kind)") }
                if let problem = TransportOptions.problem(key: key, value: text) { throw fail("\(path).\(key)", problem) }
                options[key] = text
            }
            return options
        case let other?:
            throw fail(path, "expected an object of strings, got \(other.kind)")
        }
    }

    /// An optional byte count (``ByteCount``): a whole JSON number from 0 to 2^62 (`1e3` is 1000).
    func byteCount(_ value: JSON?, _ path: String) throws(CatalogError) -> Int64? {
        do throws(BoundaryError) {
            switch value {
            case nil, .null?: return nil
            case .integer(let number)?: return try ByteCount(number, door: path).bytes
            case .number(let number)?: return try ByteCount(number: number, door: path).bytes
            case let other?: throw BoundaryError(door: path, expected: ByteCount.expected, value: other.kind)
            }
        } catch {
            throw fail(path, error.problem)
        }
    }

    func describe(_ value: JSON) -> String {
        switch value {
        case .integer(let number): "\(number)"
        case .number(let number): "\(number)"
        default: value.kind
        }
    }

    func requiredString(_ object: [String: JSON], _ key: String, _ path: String) throws(CatalogError) -> String {
        guard let value = try optionalString(object, key, path) else { throw fail("\(path).\(key)", "missing") }
        return value
    }

    func optionalString(_ object: [String: JSON], _ key: String, _ path: String) throws(CatalogError) -> String? {
        switch object[key] {
        case nil, .null?: return nil
        case .string(let text)?:
            if text.isEmpty { throw fail("\(path).\(key)", "is empty") }
            return text
        case let other?: throw fail("\(path).\(key)", "expected a string, got \(other.kind)")
        }
    }

    /// Resolves a URL against the catalog's own URL (a plain path too), to the URL a server
    /// reads: its path normalized as ``URLScope`` compares it (`a/%2e%2e/b` is `b`), so that
    /// what is stored, shown and matched against `[[credentials]]` is what is fetched.
    func resolve(_ text: String, path: String) throws(CatalogError) -> URL {
        // `\` is `/` to browsers' URL parsers and a character to Foundation's: `\\host\x` may
        // name another server.
        if text.contains("\\") {
            throw fail(path, "'\(PathResolution.redacted(text))' holds a backslash, which URL parsers read differently "
                       + "(as / or as a character): write / or %5C")
        }
        var relative = URL(string: text, relativeTo: url)
        if relative == nil, let encoded = text.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) {
            relative = URL(string: encoded, relativeTo: url)
        }
        guard !text.contains("\0"), let relative, relative.absoluteURL.scheme != nil else {
            throw fail(path, "malformed URL '\(PathResolution.redacted(text))'")
        }
        let absolute = relative.absoluteURL
        if absolute.isFileURL, !url.isFileURL {
            throw fail(path, "'\(PathResolution.redacted(text))' is a local file, but the catalog is not (\(url.scheme ?? "?"))")
        }
        if absolute.password != nil {
            throw fail(path, "'\(PathResolution.redacted(text))' holds a password (user:password@); the library never "
                       + "stores one: credentials belong in the configuration's [[credentials]]")
        }
        let scheme = absolute.scheme?.lowercased() ?? ""
        guard scheme == "http" || scheme == "https" || limits.allowedSchemes.contains(scheme) || sameOrigin(absolute) else {
            throw fail(path, "'\(PathResolution.redacted(text))' uses the scheme '\(scheme)'; a catalog's assets may use "
                       + "http, https and the catalog's own server (add '\(scheme)' to allowed_schemes of this "
                       + "[[feeds]] entry to allow it)")
        }
        // A path servers read differently stays as written: it never matches a credential's path.
        return URLScope.normalized(absolute) ?? absolute.standardized
    }

    /// Whether `other` has the catalog's scheme, host and port (``URLScope/isSameOrigin(_:_:)``)
    /// and user: a local catalog's local files, or files next to an `sftp://` catalog on its own server.
    func sameOrigin(_ other: URL) -> Bool {
        if url.isFileURL { return other.isFileURL }
        return URLScope.isSameOrigin(other, url) && other.user == url.user
    }

    func date(_ text: String, path: String) throws(CatalogError) -> Date {
        guard let date = Catalog.date(from: text) else {
            throw fail(path, "expected a date such as \"2026-11-21\" or \"2026-11-21T06:00:00Z\", got \"\(text)\"")
        }
        if let problem = LibraryDate.problem(with: date) { throw fail(path, "\"\(text)\": \(problem)") }
        return date
    }
}
