import Foundation
import PaperboyTesting

/// `zsyncmake` (Debian's `zsync`), run by tests on data they generate: the control files a
/// publisher would serve beside a file (docs/ChunkIndex.md, "zsync control files").
public enum Zsyncmake {
    /// The installed `zsyncmake`, if any.
    public static let binary = LoopbackWebServer.installed("zsyncmake")

    /// The control file `zsyncmake` writes for `data`, with `blockSize` when given (else its own
    /// choice); `nil` when it is not installed (the test skips), an error under `CI=true`.
    ///
    /// It blocks while the tool runs: call it off the cooperative pool (``offThePool(_:)``).
    ///
    /// - Throws: ``ServerError`` when the tool is missing under `CI=true` or fails.
    public static func controlFile(for data: Data, blockSize: Int? = nil) throws -> Data? {
        guard let binary = try LoopbackWebServer.required(binary, program: "zsyncmake", package: "zsync") else { return nil }
        let folder = TempFolder()
        let file = folder.file("file.bin")
        let control = folder.file("file.bin.zsync")
        try data.write(to: file)
        var arguments = ["-u", "file.bin", "-o", control.path]
        if let blockSize { arguments += ["-b", String(blockSize)] }
        let (status, output) = try ChildProcess.run(binary, arguments + [file.path])
        guard status == 0 else { throw ServerError("zsyncmake \(arguments.joined(separator: " ")) exited with \(status): \(output)") }
        return try Data(contentsOf: control)
    }
}
