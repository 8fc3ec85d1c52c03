/// A number from outside refused where it entered: the one error of the boundary types
/// (``ByteCount``, rates through ``ByteCount/rate(_:door:)``).
///
/// It names the door as its caller wrote it (`"daemon request PURGE budget_bytes"`,
/// `"helper frame BEGIN offset"`, `"Content-Range"`), what the door takes, and the value as it
/// arrived, shortened and escaped for terminals. Doors with an error type of their own (a
/// catalog's, which names the feed and the JSON path; the configuration's, which names the
/// file, line and key) put ``problem`` in it; the library's API wraps it in a ``LibraryError``
/// (``LibraryError/init(_:)-(BoundaryError)``).
public struct BoundaryError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Where the value entered.
    public var door: String
    /// What the door takes: `"a number of bytes (a whole number from 0 to 2^62)"`.
    public var expected: String
    /// The value as it arrived: at most ``maxShownValue`` characters, control characters escaped.
    public var value: String

    /// The most characters of a value a message quotes (a header of a million digits is not
    /// repeated in a log).
    public static let maxShownValue = 40

    /// Creates an error; `value` is shortened and escaped here.
    public init(door: String, expected: String, value: some StringProtocol) {
        self.door = door
        self.expected = expected
        let shown = value.count > Self.maxShownValue ? "\(value.prefix(Self.maxShownValue))… (\(value.count) characters)" : String(value)
        self.value = TerminalText.escape(shown)
    }

    /// `expected …, got …`, without the door.
    public var problem: String { "expected \(expected), got \(value)" }

    /// `door: expected …, got …`.
    public var description: String { "\(door): \(problem)" }
}

extension LibraryError {
    /// The library's error for a value its API refused: `.invalidRequest`, naming the door and the value.
    public init(_ error: BoundaryError) {
        self.init(.invalidRequest, error.description, underlying: error)
    }
}
