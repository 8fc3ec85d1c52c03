#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Paperboy
import PaperboyExec
import PaperboyTesting
import Synchronization
import Testing

extension TempFolder {
    /// Writes an executable script.
    @discardableResult
    func script(_ name: String, _ text: String) -> URL {
        let file = file(name)
        try! Data(text.utf8).write(to: file)
        chmod(file.path, 0o755)
        return file
    }
}

/// A helper that misbehaves in the way its first argument names; generated at test time.
///
/// Modes: serve (correct), crash, garbage, overflow, version, hang, stubborn (ignores SIGTERM
/// and hangs), count (serves 4 MiB without blocking writes; each time the pipe is full it
/// records in $COUNT_FILE how many bytes it had written, then waits for room), error (answers
/// `ERROR` with the JSON fields given as the second argument).
let fakeHelper = #"""
#!/usr/bin/env python3
import json, os, select, signal, sys, time
mode = sys.argv[1]
stdin, stdout = sys.stdin.buffer, sys.stdout.buffer

def read_frame():
    header = stdin.readline()
    if not header:
        sys.exit(0)
    kind, length = header.split()
    return kind.decode(), stdin.read(int(length))

def send(kind, payload=b""):
    stdout.write(b"%s %d\n" % (kind.encode(), len(payload)) + payload)
    stdout.flush()

def send_json(kind, message):
    send(kind, json.dumps(message).encode())

handed = 0
def send_counting(kind, payload=b""):
    # Non-blocking: a full pipe is an event to record, not a wait to guess.
    global handed
    view = memoryview(b"%s %d\n" % (kind.encode(), len(payload)) + payload)
    while view:
        try:
            written = os.write(stdout.fileno(), view)
            view, handed = view[written:], handed + written
        except BlockingIOError:
            path = os.environ["COUNT_FILE"]
            with open(path + ".new", "w") as file:
                file.write(str(handed))
            os.rename(path + ".new", path)
            select.select([], [stdout.fileno()], [])

read_frame()
if mode == "garbage":
    stdout.write(b"Traceback (most recent call last): oops\n")
    stdout.flush()
    time.sleep(30)
if mode == "version":
    send_json("HELLO", {"protocol": 2, "schemes": ["fake"]})
    time.sleep(30)
send_json("HELLO", {"protocol": 1, "name": "fake", "schemes": ["fake"], "capabilities": ["resume"]})
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
print(f"fake helper {os.getpid()} ready in mode {mode}", file=sys.stderr, flush=True)
while True:
    kind, payload = read_frame()
    request = json.loads(payload)
    rid = request["id"]
    if mode == "error":
        # <NUL> stands for a NUL byte, which an argument cannot hold.
        send("ERROR", b'{"id": %d, "code": "rate-limited", "message": "slow down", %s}' % (rid, sys.argv[2].encode().replace(b"<NUL>", b"\0")))
        continue
    data = bytes(range(256)) * 4096
    if mode == "count":
        data = data * 4
    send_json("BEGIN", {"id": rid, "offset": 0, "length": len(data) - (1000 if mode == "overflow" else 0),
                        "validator": {"value": "v1", "strength": "strong"}})
    if mode in ("hang", "stubborn"):
        time.sleep(60)
    if mode == "count":
        os.set_blocking(stdout.fileno(), False)
        for start in range(0, len(data), 65536):
            send_counting("DATA", data[start:start + 65536])
        send_counting("DONE", json.dumps({"id": rid}).encode())
        os.set_blocking(stdout.fileno(), True)
        continue
    for start in range(0, len(data), 65536):
        if mode == "crash" and start >= 3 * 65536:
            print("fake helper: disk on fire, giving up", file=sys.stderr, flush=True)
            os._exit(3)
        send("DATA", data[start:start + 65536])
    send_json("DONE", {"id": rid})
"""#

extension TempFolder {
    /// An ``ExecTransport`` for scheme `fake` running the fake helper in `mode`, its timeouts on
    /// `clock` (a termination grace of 300 ms, idle helpers kept 30 s).
    func fakeTransport(_ mode: String, _ arguments: [String] = [], environment: [String: String] = [:],
                       clock: any LibraryClock) -> ExecTransport {
        let helper = script("fake-helper", fakeHelper)
        var env = ProcessInfo.processInfo.environment
        for (key, value) in environment { env[key] = value }
        return ExecTransport(scheme: "fake", command: [helper.path, mode] + arguments, environment: env,
                             terminationGrace: .milliseconds(300), clock: clock)
    }
}

/// A sink that holds its first `write` until ``open()``: the core is then stuck in the sink, as
/// behind a slow disk, for as long as the test wants, and nothing is timed.
final class GatedSink: TransferSink {
    private struct State {
        var data = Data()
        var response: TransferResponse?
        var open = false
        var held: Data?
        var gate: CheckedContinuation<Void, Never>?
        var writable: [@Sendable () -> Void] = []
    }

    private let state = Mutex(State())

    /// The bytes written, the held write's included.
    var bytesTaken: Int { state.withLock { $0.data.count + ($0.held?.count ?? 0) } }
    /// Whether a write waits at the gate.
    var isHolding: Bool { state.withLock { $0.held != nil } }
    var data: Data { state.withLock { $0.data } }

    /// Lets the held write and all later ones through.
    func open() {
        let (gate, writable) = state.withLock { state in
            state.open = true
            defer { state.writable = [] }
            return (state.gate.take(), state.writable)
        }
        gate?.resume()
        for callback in writable { callback() }
    }

    func begin(_ response: TransferResponse) throws { state.withLock { $0.response = response } }

    func write(_ bytes: UnsafeRawBufferPointer) async throws {
        let chunk = Data(bytes)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let passes = state.withLock { state -> Bool in
                guard !state.open else { return true }
                state.held = chunk
                state.gate = continuation
                return false
            }
            if passes { continuation.resume() }
        }
        state.withLock { state in
            state.held = nil
            state.data.append(chunk)
        }
    }

    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool {
        state.withLock { state in
            guard state.open else { return false }
            state.data.append(contentsOf: bytes)
            return true
        }
    }

    func whenWritable(_ callback: @escaping @Sendable () -> Void) {
        let now = state.withLock { state -> Bool in
            if !state.open { state.writable.append(callback) }
            return state.open
        }
        if now { callback() }
    }

    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { .performDefaultHandling }
}

/// Whether process `pid` is gone (reaped, not a zombie).
func processIsGone(_ pid: Int32) -> Bool {
    kill(pid, 0) != 0 && errno == ESRCH
}

/// Whether process `pid` is gone or a zombie (for processes that are not our children).
func processIsDeadOrZombie(_ pid: Int32) -> Bool {
    if processIsGone(pid) { return true }
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return true }
    return stat[stat.index(close, offsetBy: 2)] == "Z"
}

/// The failure a transfer ended with.
func failure(of transport: some Transport, _ job: TransferJob, into sink: some TransferSink) async -> (any Error)? {
    do {
        try await transport.transfer(job, into: sink)
        return nil
    } catch {
        return error
    }
}
