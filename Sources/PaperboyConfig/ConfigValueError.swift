/// A value that does not follow its syntax, such as a rate or a duration; carries no location.
///
/// ``PaperboyConfiguration/parse(_:fileURL:environment:)`` turns it into a ``ConfigError``
/// that names the file, line and key.
public struct ConfigValueError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What is wrong with the value.
    public var message: String

    /// Creates an error with a message.
    public init(_ message: String) {
        self.message = message
    }

    /// The message.
    public var description: String { message }
}
