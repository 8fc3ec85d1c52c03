import CFuzzDriver
import Foundation

/// Runs a fuzz target under libFuzzer: `Fuzzer.main(fuzz)` from the target's `@main`.
///
/// libFuzzer also brings a C `main` that calls `LLVMFuzzerTestOneInput`, but SwiftPM renames an
/// executable's entry point, so each target has a Swift `main` and starts the driver itself.
public enum Fuzzer {
    /// Hands the process's arguments to libFuzzer, which calls `body` with every input; never
    /// returns (libFuzzer exits with 0, or with its own codes after a crash, a leak or a timeout).
    public static func main(_ body: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> Never {
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        let code = LLVMFuzzerRunDriver(&argc, &argv, body)
        exit(code)
    }

    /// The input as `Data` (an empty input has no pointer).
    public static func data(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> Data {
        guard let bytes, count > 0 else { return Data() }
        return Data(bytes: bytes, count: count)
    }

    /// Runs `body` on a thread with `stackSize` bytes of stack and waits for it: a door that
    /// decodes on such a thread (the daemon's connection readers) is fuzzed with the stack it has.
    public static func onThread(stackSize: Int, _ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        let thread = Thread {
            // A stack of its own for signal handlers, so that libFuzzer's reports a stack
            // overflow on this thread (and writes the input out) instead of the kernel killing us.
            let altSize = 64 * 1024
            let alt = UnsafeMutableRawPointer.allocate(byteCount: altSize, alignment: 16)
            var stack = stack_t(ss_sp: alt, ss_flags: 0, ss_size: altSize)
            sigaltstack(&stack, nil)
            body()
            stack.ss_flags = Int32(SS_DISABLE)
            sigaltstack(&stack, nil)
            alt.deallocate()
            done.signal()
        }
        thread.stackSize = stackSize
        thread.start()
        done.wait()
    }

    /// A folder of its own under `TMPDIR` (`scripts/fuzz` points it at a folder it removes
    /// afterwards), made once per process.
    public static let scratch: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("paperboy-fuzz-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }()

    /// Stops the process with `message` when `condition` is false: a broken promise is a finding,
    /// as a crash is (libFuzzer keeps the input).
    public static func expect(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String) {
        if !condition() {
            FileHandle.standardError.write(Data("fuzz: broken promise: \(message())\n".utf8))
            abort()
        }
    }
}
