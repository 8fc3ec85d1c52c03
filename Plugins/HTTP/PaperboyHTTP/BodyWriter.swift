import CPaperboyCurl
import Dispatch
import Foundation
import Paperboy
import Synchronization

/// Write-behind for one large response body: the curl thread copies each chunk into a bounded
/// ring and goes back to the socket, while a thread of this transfer's own hands the ring's
/// bytes to the sink in large pieces.
///
/// Why: libcurl 7.88 hands the write callback at most 16 KiB at a time, whatever the receive
/// buffer, so writing inline costs one `write(2)` per 16 KiB on the curl thread, and the socket
/// is not read while the file is written. Here receiving and writing overlap (on two cores), and
/// the sink sees pieces of up to the receive buffer's size.
///
/// Memory is bounded by `capacity`, allocated once. Back-pressure still goes through libcurl:
/// when the ring is full, ``offer(_:)`` answers `.full`, the request returns
/// `CURL_WRITEFUNC_PAUSE`, and `onSpace` (which asks the curl thread to unpause) runs once the
/// bytes curl holds fit. When the sink pushes back, the writer waits for `whenWritable` and the
/// ring fills. Bytes reach the sink in order, from the writer thread only, so the sink's "calls do
/// not overlap" rule holds (`begin` was called before the writer started).
final class BodyWriter: @unchecked Sendable {
    enum Offer {
        /// Copied; the curl callback may return.
        case taken
        /// No room: pause the transfer; `onSpace` runs when there is.
        case full
        /// The sink failed; abort the transfer.
        case failed(any Error)
    }

    /// How the writer stopped.
    struct Ending {
        /// Bytes the sink took.
        var written: Int64
        /// The error the sink threw, if any.
        var failure: (any Error)?
        /// The transfer was cancelled (``abandon()`` or `end(stopping: true)`); bytes the sink
        /// did not take at once were dropped.
        var abandoned: Bool
    }

    private struct State {
        /// Bytes handed to the sink so far (ring positions are these totals modulo the capacity).
        var head = 0
        /// Bytes received so far.
        var tail = 0
        var ended = false
        /// Cancelled: bytes still go to the sink while it takes them at once; at its first push
        /// back the rest is dropped (see ``end(stopping:then:)``).
        var stopping = false
        var exited = false
        var failure: (any Error)?
        var writerSleeping = false
        /// The size of the chunk curl holds while paused, waiting for room.
        var producerWaiting: Int?
        var completion: (@Sendable (Ending) -> Void)?

        var ending: Ending { Ending(written: Int64(head), failure: failure, abandoned: stopping) }
    }

    /// Write-behinds running now, across all transfers: more threads than cores gain nothing.
    private static let running = Atomic<Int>(0)
    /// At most this many transfers write behind at once; the others write inline.
    static let maxRunning = 2

    private let ring: UnsafeMutableRawBufferPointer
    private let capacity: Int
    /// The largest piece handed to the sink at once.
    private let piece: Int
    /// The writer sleeps until this many bytes wait (or 20 ms pass, or the body ends).
    private let batch: Int
    private let state = Mutex(State())
    /// Wakes the writer when bytes arrive or the body ends.
    private let wake = DispatchSemaphore(value: 0)
    /// Wakes the writer when the sink takes bytes again (or the transfer is abandoned).
    private let writable = DispatchSemaphore(value: 0)
    private let sink: any TransferSink
    private let onSpace: @Sendable () -> Void

    /// Starts a writer if fewer than ``maxRunning`` are running, else returns `nil`.
    static func start(
        capacity: Int, piece: Int, sink: any TransferSink, onSpace: @escaping @Sendable () -> Void
    ) -> BodyWriter? {
        guard running.add(1, ordering: .relaxed).newValue <= maxRunning else {
            running.subtract(1, ordering: .relaxed)
            return nil
        }
        let writer = BodyWriter(capacity: capacity, piece: piece, sink: sink, onSpace: onSpace)
        Thread.detachNewThread { writer.run() }
        return writer
    }

    private init(capacity: Int, piece: Int, sink: any TransferSink, onSpace: @escaping @Sendable () -> Void) {
        self.capacity = capacity
        self.piece = max(1, min(piece, capacity))
        batch = max(1, min(capacity / 4, 256 * 1024))
        ring = .allocate(byteCount: capacity, alignment: 64)
        self.sink = sink
        self.onSpace = onSpace
    }

    deinit {
        ring.deallocate()
    }

    // MARK: The curl thread

    /// Copies `bytes` into the ring, or says why it cannot.
    func offer(_ bytes: UnsafeRawBufferPointer) -> Offer {
        let count = bytes.count
        guard count > 0 else { return .taken }
        let (tail, room, failure) = state.withLock { ($0.tail, capacity - ($0.tail - $0.head), $0.failure) }
        if let failure { return .failed(failure) }
        guard count <= capacity else {
            return .failed(TransportError(.ioError, "a chunk of \(count) bytes exceeds the \(capacity)-byte write-behind buffer"))
        }
        if count > room {
            // Check again under the lock: the writer may have made room since.
            let full = state.withLock { state -> Bool in
                guard capacity - (state.tail - state.head) < count, state.failure == nil else { return false }
                state.producerWaiting = count
                return true
            }
            return full ? .full : offer(bytes)
        }
        // Only this thread moves the tail and the writer never reads past it: copy unlocked.
        let start = tail % capacity
        let first = min(count, capacity - start)
        UnsafeMutableRawBufferPointer(rebasing: ring[start..<start + first])
            .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<first]))
        if first < count {
            UnsafeMutableRawBufferPointer(rebasing: ring[0..<count - first])
                .copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[first...]))
        }
        let wakeWriter = state.withLock { state -> Bool in
            state.tail += count
            guard state.writerSleeping, state.tail - state.head >= batch else { return false }
            state.writerSleeping = false
            return true
        }
        if wakeWriter { wake.signal() }
        return .taken
    }

    /// Ends the body: the writer hands every byte still in the ring to the sink, stops, and then
    /// calls `completion`; the sink is not called after `completion` starts.
    ///
    /// With `stopping` (a cancelled transfer), the bytes received still reach the file only as
    /// far as the sink takes them without waiting (all of them without a bandwidth limit): a stop
    /// (Ctrl-C, SIGTERM, a pause) then records them and the next attempt does not fetch them
    /// again, while a slow limit cannot hold the stop. At the sink's first push back the rest is
    /// dropped, and the ending says `abandoned`.
    func end(stopping: Bool = false, then completion: @escaping @Sendable (Ending) -> Void) {
        let finished = state.withLock { state -> Ending? in
            state.ended = true
            if stopping { state.stopping = true }
            if state.exited { return state.ending }
            state.completion = completion
            state.writerSleeping = false
            return nil
        }
        if let finished {
            completion(finished)
            return
        }
        wake.signal()
        if stopping { writable.signal() }
    }

    /// Stops a writer still draining after libcurl finished (a transfer cancelled then), as
    /// `end(stopping: true)` does: only the bytes the sink takes at once still reach it. The completion given to
    /// ``end`` runs as the writer stops.
    func abandon() {
        state.withLock { state in
            state.stopping = true
            state.writerSleeping = false
        }
        wake.signal()
        writable.signal()
    }

    // MARK: The writer thread

    private enum Step {
        case write(start: Int, count: Int)
        case sleep
        case stop
    }

    private func run() {
        paperboy_name_thread("paperboy-writer")
        var flushSmall = false
        loop: while true {
            let step = state.withLock { state -> Step in
                let waiting = state.tail - state.head
                if waiting == 0, state.ended { return .stop }
                guard waiting >= batch || state.ended || (flushSmall && waiting > 0) else {
                    state.writerSleeping = true
                    return .sleep
                }
                let start = state.head % capacity
                return .write(start: start, count: min(waiting, piece, capacity - start))
            }
            switch step {
            case .stop:
                break loop
            case .sleep:
                // A slow source still reaches the file (and the progress events) every 20 ms.
                flushSmall = wake.wait(timeout: .now() + .milliseconds(20)) == .timedOut
                state.withLock { $0.writerSleeping = false }
            case .write(let start, let count):
                flushSmall = false
                do {
                    guard try sink.tryWrite(UnsafeRawBufferPointer(rebasing: ring[start..<start + count])) else {
                        if state.withLock({ $0.stopping }) { break loop }
                        sink.whenWritable { [writable] in writable.signal() }
                        writable.wait()
                        // Woken by a stop while the sink still pushes back: calling it again
                        // before its `whenWritable` callback would break the contract.
                        if state.withLock({ $0.stopping }) { break loop }
                        continue
                    }
                } catch {
                    let paused = state.withLock { state -> Bool in
                        state.failure = error
                        defer { state.producerWaiting = nil }
                        return state.producerWaiting != nil
                    }
                    // A paused transfer must run its callback again to see the failure and abort.
                    if paused { onSpace() }
                    break loop
                }
                let resume = state.withLock { state -> Bool in
                    state.head += count
                    guard let wanted = state.producerWaiting, capacity - (state.tail - state.head) >= wanted else { return false }
                    state.producerWaiting = nil
                    return true
                }
                if resume { onSpace() }
            }
        }
        Self.running.subtract(1, ordering: .relaxed)
        let (completion, ending) = state.withLock { state in
            state.exited = true
            defer { state.completion = nil }
            return (state.completion, state.ending)
        }
        completion?(ending)
    }
}
