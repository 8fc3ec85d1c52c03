#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CPaperboyTestSpawn
import Foundation

/// A child process started with `posix_spawn`, for tests that start hundreds of them.
///
/// Foundation's `Process.run()` on Linux (Swift 6.3) now and then crashes the calling process
/// while it lists `/proc/self/fd` (a read past glibc's dirent buffer, fixed upstream in
/// swift-corelibs-foundation#5472): once in a few runs of this suite, the whole test process
/// died. This starts the child without that code; like Foundation, it closes every other
/// descriptor in the child.
public final class ChildProcess: @unchecked Sendable {
    /// How the child ended.
    public enum TerminationReason: Sendable { case exit, uncaughtSignal }

    /// The child's PID.
    public let processIdentifier: pid_t
    private let ended = NSCondition()
    private var result: (reason: TerminationReason, status: Int32)?

    /// Starts `executable` with `arguments`.
    ///
    /// - Parameters:
    ///   - environment: the child's environment (default: this process's).
    ///   - folder: the working folder (default: this process's).
    ///   - standardInput: the descriptor the child reads (default `/dev/null`);
    ///   - standardOutput, standardError: descriptors the child writes to (default `/dev/null`);
    ///     the caller keeps and closes its own.
    ///   - passing: a descriptor the child gets as its descriptor 3 (systemd's first
    ///     `LISTEN_FDS` descriptor); the caller keeps and closes its own.
    ///   - unblockingSignals: start the child with no signal blocked. Otherwise it inherits the
    ///     calling thread's mask, and the threads of Swift's concurrency runtime block SIGTERM:
    ///     a server that does not unblock it itself (lighttpd) would never stop on SIGTERM.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, in folder: String? = nil,
        standardInput: Int32? = nil, standardOutput: Int32? = nil, standardError: Int32? = nil, passing: Int32? = nil,
        unblockingSignals: Bool = false
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if let standardInput {
            posix_spawn_file_actions_adddup2(&actions, standardInput, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        for (target, source) in [(Int32(1), standardOutput), (Int32(2), standardError)] {
            if let source {
                posix_spawn_file_actions_adddup2(&actions, source, target)
            } else {
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", O_WRONLY, 0)
            }
        }
        if let passing {
            // dup2 onto itself would keep close-on-exec: go through another number (closed below),
            // one that is not `passing` (a test running beside others may be given 100).
            let relay: Int32 = passing == 100 ? 101 : 100
            posix_spawn_file_actions_adddup2(&actions, passing, relay)
            posix_spawn_file_actions_adddup2(&actions, relay, 3)
        }
        // Nothing else is inherited (another test's pipe would not see its end of file).
        paperboy_test_spawn_closefrom(&actions, passing == nil ? 3 : 4)
        if let folder { paperboy_test_spawn_chdir(&actions, folder) }
        let command = [executable]
        let environment = environment ?? ProcessInfo.processInfo.environment
        var argv: [UnsafeMutablePointer<CChar>?] = (command + arguments).map { strdup($0) } + [nil]
        var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if unblockingSignals {
            var none = sigset_t()
            sigemptyset(&none)
            posix_spawnattr_setsigmask(&attributes, &none)
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        }
        var pid: pid_t = 0
        let status = posix_spawn(&pid, command[0], &actions, &attributes, &argv, &envp)
        guard status == 0 else { throw ServerError("cannot start \(executable): \(String(cString: strerror(status)))") }
        processIdentifier = pid
        let child = pid
        // Reaped on a thread of its own, so that waiting never blocks the cooperative pool.
        Thread { [self] in
            var raw: Int32 = 0
            while waitpid(child, &raw, 0) < 0 && errno == EINTR {}
            let signalled = (raw & 0x7F) != 0 && (raw & 0x7F) != 0x7F
            ended.lock()
            result = signalled ? (.uncaughtSignal, raw & 0x7F) : (.exit, (raw >> 8) & 0xFF)
            ended.broadcast()
            ended.unlock()
        }.start()
    }

    /// Whether the child is still running.
    public var isRunning: Bool {
        ended.lock()
        defer { ended.unlock() }
        return result == nil
    }

    /// Blocks until the child has ended.
    public func waitUntilExit() {
        ended.lock()
        while result == nil { ended.wait() }
        ended.unlock()
    }

    /// Waits for the child's end without blocking a thread of the cooperative pool.
    public func exited() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread { [self] in
                waitUntilExit()
                continuation.resume()
            }.start()
        }
    }

    /// `.exit` or `.uncaughtSignal`, once ended.
    public var terminationReason: TerminationReason {
        waitUntilExit()
        return result!.reason
    }

    /// The exit status, or the signal that ended the child.
    public var terminationStatus: Int32 {
        waitUntilExit()
        return result!.status
    }

    /// Sends `signal` to the child unless it has ended (and been reaped) already.
    public func signal(_ signal: Int32) {
        ended.lock()
        defer { ended.unlock() }
        if result == nil { kill(processIdentifier, signal) }
    }
}

extension ChildProcess {
    /// Runs a tool to its end (blocking the calling thread: not from the cooperative pool in a
    /// hot path) and returns its exit status (128 + the signal when one ended it) and standard
    /// output; `input` is written to its standard input, standard error is discarded.
    @discardableResult
    public static func run(_ tool: String, _ arguments: [String], input: String? = nil) throws -> (status: Int32, output: String) {
        var output: [Int32] = [-1, -1]
        var stdin: [Int32] = [-1, -1]
        guard pipe(&output) == 0, input == nil || pipe(&stdin) == 0 else { throw ServerError("pipe: \(String(cString: strerror(errno)))") }
        let child: ChildProcess
        do {
            child = try ChildProcess(tool, arguments, standardInput: input == nil ? nil : stdin[0], standardOutput: output[1])
        } catch {
            for fd in output + stdin where fd >= 0 { close(fd) }
            throw error
        }
        close(output[1])
        if let input {
            close(stdin[0])
            let bytes = Array(input.utf8)
            _ = bytes.withUnsafeBytes { write(stdin[1], $0.baseAddress, $0.count) }
            close(stdin[1])
        }
        let handle = FileHandle(fileDescriptor: output[0], closeOnDealloc: true)
        let data = (try? handle.readToEnd()) ?? Data()
        let status = child.terminationReason == .exit ? child.terminationStatus : 128 + child.terminationStatus
        return (status, String(decoding: data, as: UTF8.self))
    }
}
