#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Foundation
import Synchronization

/// Makes finished files durable before they are delivered, off the cooperative pool.
///
/// Large files are synced one by one (`fdatasync`); small ones join a group commit: one
/// `syncfs` for every file finished while the previous one ran, so thousands of small assets
/// cost a handful of syncs rather than one each.
final class Durability: Sendable {
    private let queue = DispatchQueue(label: "paperboy.durability", attributes: .concurrent)
    private let rootDescriptor: Int32
    private let group = Mutex<GroupState>(GroupState())
    let enabled: Bool
    /// Tests only: runs on the durability queue before each file is made durable (to hold it).
    let beforeSync = LockedFunction<@Sendable () -> Void>()

    private struct GroupState {
        var waiting: [CheckedContinuation<Void, Never>] = []
        var inFlight = false
    }

    /// Files at least this large are synced on their own.
    static let individualSyncThreshold: Int64 = 4 << 20

    init(root: URL, enabled: Bool) {
        self.enabled = enabled
        rootDescriptor = open(root.path, O_RDONLY | O_CLOEXEC)
    }

    deinit {
        if rootDescriptor >= 0 { POSIX.closeFile(rootDescriptor) }
    }

    /// Runs `work` on a thread outside the cooperative pool.
    func offload<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: work()) }
        }
    }

    /// Whether a file of `size` bytes is made durable by a file system sync (its descriptor is
    /// then not needed, and may be closed first).
    func joinsGroupCommit(size: Int64) -> Bool {
        size < Self.individualSyncThreshold && rootDescriptor >= 0
    }

    /// Makes the data of `fd` (of `size` bytes) durable; `fd` is not used when
    /// ``joinsGroupCommit(size:)``.
    func makeDurable(fd: Int32, size: Int64) async {
        guard enabled else { return }
        if let hook = beforeSync.function { await offload(hook) }
        if !joinsGroupCommit(size: size) {
            await offload { POSIX.dataSync(fd) }
        } else {
            await groupCommit()
        }
    }

    private func groupCommit() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let start = group.withLock { state -> Bool in
                state.waiting.append(continuation)
                if state.inFlight { return false }
                state.inFlight = true
                return true
            }
            if start { runRound() }
        }
    }

    private func runRound() {
        queue.async { [self] in
            let batch = group.withLock { state -> [CheckedContinuation<Void, Never>] in
                defer { state.waiting = [] }
                return state.waiting
            }
            POSIX.fileSystemSync(rootDescriptor)
            for continuation in batch { continuation.resume() }
            let again = group.withLock { state -> Bool in
                if state.waiting.isEmpty {
                    state.inFlight = false
                    return false
                }
                return true
            }
            if again { runRound() }
        }
    }
}
