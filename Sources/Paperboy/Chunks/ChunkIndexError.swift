/// A chunk index refused: which index (its URL or path), what was wrong, where.
package struct ChunkIndexError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What was wrong.
    package enum Kind: Sendable, Equatable {
        /// The first five bytes are not `PBIDX`.
        case magic
        /// A version this code does not read.
        case version
        /// Chunk sizes the format does not allow.
        case parameters
        /// A file larger than the reader's limit, or an index larger than its own header allows.
        case size
        /// A chunk count the file's size rules out, or above the reader's limit.
        case count
        /// Fewer bytes than the header (or the entries it announces).
        case truncated
        /// Bytes after the last entry.
        case trailing
        /// A chunk of length 0, above the maximum, or (but the last) below the minimum.
        case chunkLength
        /// Lengths that do not add up to the file's size.
        case total
        /// The index could not be read at all.
        case unreadable
    }

    /// The index, as its reader named it: a URL or a path.
    package var source: String
    package var kind: Kind
    /// The problem, with its place: `chunk 3 of 12 (byte 174) has length 0`.
    package var problem: String

    package init(source: String, kind: Kind, problem: String) {
        self.source = source
        self.kind = kind
        self.problem = problem
    }

    /// `chunk index https://cdn.example.com/a.pdf.pbidx: chunk 3 of 12 (byte 174) has length 0`.
    package var description: String { "chunk index \(source): \(problem)" }
}
