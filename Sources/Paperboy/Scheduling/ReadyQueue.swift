/// Assets waiting for a slot: highest priority first, first in first out within one priority,
/// and never more than the per-host limit running against one host.
///
/// Entries are removed lazily: `pop` skips identifiers the caller no longer considers ready, so
/// pausing or cancelling a queued asset is O(1).
struct ReadyQueue {
    private struct Item {
        var seq: Int64
        var id: String
    }

    private struct FIFO {
        var items: [Item] = []
        var head = 0
        var isEmpty: Bool { head >= items.count }
        mutating func append(_ item: Item) { items.append(item) }
        var first: Item? { isEmpty ? nil : items[head] }
        mutating func removeFirst() {
            head += 1
            if head > 1024, head * 2 > items.count {
                items.removeFirst(head)
                head = 0
            }
        }
    }

    /// priority → host → FIFO
    private var levels: [Int: [String: FIFO]] = [:]
    private var sortedPriorities: [Int] = []
    private(set) var count = 0

    /// The lowest priority waiting, if any.
    var lowestPriority: Int? { sortedPriorities.last }

    mutating func push(id: String, seq: Int64, priority: Int, host: String) {
        if levels[priority] == nil {
            levels[priority] = [:]
            sortedPriorities.append(priority)
            sortedPriorities.sort(by: >)
        }
        levels[priority]![host, default: FIFO()].append(Item(seq: seq, id: id))
        count += 1
    }

    /// Removes and returns the next runnable identifier.
    ///
    /// - Parameters:
    ///   - hostHasRoom: whether another transfer may start against a host.
    ///   - isReady: whether an identifier is still waiting to run (stale ones are dropped).
    mutating func pop(hostHasRoom: (String) -> Bool, isReady: (String) -> Bool) -> (id: String, host: String)? {
        for priority in sortedPriorities {
            guard var hosts = levels[priority] else { continue }
            var best: (host: String, seq: Int64)?
            for (host, var fifo) in hosts {
                while let item = fifo.first, !isReady(item.id) {
                    fifo.removeFirst()
                    count -= 1
                }
                hosts[host] = fifo
                guard let item = fifo.first, hostHasRoom(host) else { continue }
                if best == nil || item.seq < best!.seq { best = (host, item.seq) }
            }
            hosts = hosts.filter { !$0.value.isEmpty }
            if let best {
                let item = hosts[best.host]!.first!
                hosts[best.host]!.removeFirst()
                count -= 1
                if hosts[best.host]!.isEmpty { hosts[best.host] = nil }
                levels[priority] = hosts.isEmpty ? nil : hosts
                if hosts.isEmpty { sortedPriorities.removeAll { $0 == priority } }
                return (item.id, best.host)
            }
            levels[priority] = hosts.isEmpty ? nil : hosts
            if hosts.isEmpty { sortedPriorities.removeAll { $0 == priority } }
        }
        return nil
    }
}
