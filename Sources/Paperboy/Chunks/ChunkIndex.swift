import Foundation

/// What a publisher says about a file so that a reader can fetch only the parts it lacks: the
/// file's size and SHA-256, how it was cut, and each chunk's length and SHA-256, in order.
///
/// Written beside the file as `FILE.pbidx` by `paperboy index` (``make(ofFileAt:parameters:segments:)``,
/// ``encoded()``); read from a stranger by ``decode(_:from:limits:)`` or
/// ``read(contentsOf:limits:)``, which refuse anything the writer would not have written. The
/// format, byte by byte, is docs/ChunkIndex.md: a 66-byte header, then 36 bytes per chunk.
package struct ChunkIndex: Sendable, Equatable {
    /// One chunk: where it starts in the file, its length, its SHA-256.
    package struct Chunk: Sendable, Hashable {
        /// The sum of the lengths of the chunks before it (not stored in the index).
        package var offset: Int64
        package var length: Int
        package var sha256: SHA256Value

        package init(offset: Int64, length: Int, sha256: SHA256Value) {
            self.offset = offset
            self.length = length
            self.sha256 = sha256
        }
    }

    /// The first five bytes of every index: `PBIDX`.
    package static let magic: [UInt8] = Array("PBIDX".utf8)
    /// The one version this code reads and writes.
    package static let version: UInt8 = 1
    /// Magic, version, minimum, average, maximum, file size, SHA-256, chunk count.
    package static let headerSize = 5 + 1 + 4 + 4 + 4 + 8 + 32 + 8
    /// A chunk's length (4 bytes) and SHA-256 (32).
    package static let entrySize = 4 + 32

    package let parameters: ChunkingParameters
    /// The file's size in bytes: the sum of the chunks' lengths.
    package let fileSize: Int64
    /// The whole file's SHA-256.
    package let sha256: SHA256Value
    package let chunks: [Chunk]

    /// An index of chunks that follow one another from offset 0 and add up to `fileSize`:
    /// what ``make(ofFileAt:parameters:segments:)`` and the reader build.
    init(parameters: ChunkingParameters, fileSize: Int64, sha256: SHA256Value, chunks: [Chunk]) {
        self.parameters = parameters
        self.fileSize = fileSize
        self.sha256 = sha256
        self.chunks = chunks
    }

    /// The extension of an index file: `issue.pdf.pbidx` indexes `issue.pdf`.
    package static let fileExtension = "pbidx"

    /// Where the index of `file` goes: beside it, `FILE.pbidx`.
    package static func url(besides file: URL) -> URL {
        file.appendingPathExtension(fileExtension)
    }

    /// The average chunk length in bytes (0 for an empty file).
    package var averageChunkLength: Double {
        chunks.isEmpty ? 0 : Double(fileSize) / Double(chunks.count)
    }

    /// The index in its file format (docs/ChunkIndex.md): ``headerSize`` + ``entrySize`` bytes
    /// per chunk.
    package func encoded() -> Data {
        var data = Data(capacity: Self.headerSize + chunks.count * Self.entrySize)
        data.append(contentsOf: Self.magic)
        data.append(Self.version)
        Self.append(UInt32(parameters.minimum), to: &data)
        Self.append(UInt32(parameters.average), to: &data)
        Self.append(UInt32(parameters.maximum), to: &data)
        Self.append(UInt64(fileSize), to: &data)
        data.append(contentsOf: sha256.bytes)
        Self.append(UInt64(chunks.count), to: &data)
        for chunk in chunks {
            Self.append(UInt32(chunk.length), to: &data)
            data.append(contentsOf: chunk.sha256.bytes)
        }
        return data
    }

    private static func append<Value: FixedWidthInteger>(_ value: Value, to data: inout Data) {
        withUnsafeBytes(of: value.bigEndian) { data.append(contentsOf: $0) }
    }
}
