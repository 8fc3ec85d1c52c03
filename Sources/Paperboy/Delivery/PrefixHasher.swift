#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Crypto
import Dispatch
import Foundation
import Synchronization

/// The SHA-256 of the prefix of a partial file written without a gap, fed from the file as that
/// prefix grows, for transfers whose bytes do not all pass through the sink in order (segments,
/// or a continuation of bytes already on disk).
///
/// ``advance(to:)`` (on the transport's thread) only moves a target; a worker on a utility queue,
/// outside the cooperative pool, reads the new bytes back with `pread` (from the page cache,
/// they were just written) through one fixed buffer and hashes them. ``digest(length:)`` then
/// waits only for the bytes not yet hashed, rather than reading the whole file after its last
/// byte (for 1 GiB, seconds).
///
/// The worker reads its own duplicate of the descriptor: it may outlive the sink's transfer
/// (a failure closes the sink's descriptor while it reads).
final class PrefixHasher: @unchecked Sendable {
    /// Bytes read and hashed per `pread`; also the least growth that wakes the worker.
    static let chunk = 1 << 20

    private struct State {
        /// Where the prefix known to be written ends.
        var target: Int64
        var running = false
        var failed = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let fd: Int32
    private let state: Mutex<State>
    /// Bytes from the start of the file hashed so far.
    let hashed: Atomic<Int64>
    /// Touched only by the worker while it runs (``State/running`` hands it over), and by
    /// ``digest(length:)`` once it stopped for good.
    private var hasher: SHA256

    /// A hasher that already covers the first `offset` bytes of the file `fd` with `hasher`.
    init(fd: Int32, hasher: SHA256 = SHA256(), covering offset: Int64 = 0) {
        self.fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        self.hasher = hasher
        hashed = Atomic(offset)
        state = Mutex(State(target: offset, failed: self.fd < 0))
    }

    deinit {
        if fd >= 0 { POSIX.closeFile(fd) }
    }

    /// The bytes of the file up to `end` are written: hashes them soon, off this thread.
    func advance(to end: Int64) {
        let start = state.withLock { state -> Bool in
            guard end > state.target else { return false }
            state.target = end
            guard !state.running, !state.failed, end - hashed.load(ordering: .relaxed) >= Int64(Self.chunk) else { return false }
            state.running = true
            return true
        }
        if start { DispatchQueue.global(qos: .utility).async { self.work() } }
    }

    /// The SHA-256 (lowercase hex) of the first `length` bytes, once they are hashed; nil if the
    /// file could not be read.
    func digest(length: Int64) async -> String? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let start = state.withLock { state -> Bool? in
                state.target = max(state.target, length)
                if state.running {
                    state.waiter = continuation
                    return false
                }
                if state.failed || hashed.load(ordering: .relaxed) >= state.target { return nil }
                state.running = true
                state.waiter = continuation
                return true
            }
            switch start {
            case nil: continuation.resume()
            case true?: DispatchQueue.global(qos: .utility).async { self.work() }
            case false?: break
            }
        }
        guard !state.withLock({ $0.failed }), hashed.load(ordering: .acquiring) == length else { return nil }
        return Self.hex(hasher)
    }

    /// Hashes up to the target until it stops moving, then hands over to whoever waits.
    private func work() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunk, alignment: 16)
        defer { buffer.deallocate() }
        var position = hashed.load(ordering: .relaxed)
        var failed = false
        while true {
            let next = state.withLock { state -> (target: Int64?, waiter: CheckedContinuation<Void, Never>?) in
                if failed { state.failed = true }
                if !state.failed, state.target > position { return (state.target, nil) }
                state.running = false
                defer { state.waiter = nil }
                return (nil, state.waiter)
            }
            guard let target = next.target else {
                next.waiter?.resume()
                return
            }
            while position < target {
                let want = Int(min(Int64(Self.chunk), target - position))
                let got = pread(fd, buffer.baseAddress, want, off_t(position))
                if got < 0, errno == EINTR { continue }
                guard got > 0 else {
                    failed = true
                    break
                }
                hasher.update(bufferPointer: UnsafeRawBufferPointer(rebasing: buffer[0..<got]))
                position += Int64(got)
                hashed.store(position, ordering: .releasing)
            }
        }
    }

    /// The lowercase hex digest of what `hasher` was fed.
    static func hex(_ hasher: SHA256) -> String {
        hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
