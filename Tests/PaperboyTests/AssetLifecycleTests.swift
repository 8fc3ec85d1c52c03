import Foundation
import PropertyBased
import Testing

@testable import Paperboy

/// ``AssetLifecycle``: every situation an asset can be in against every event (the table), and
/// the invariants over random runs of events (issue 28).
@Suite("Asset lifecycle")
struct AssetLifecycleTests {
    typealias Life = AssetLifecycle

    static let validator = ResourceValidator("\"v1\"", strength: .strong)
    static let policy = RetryPolicy(maxAttempts: 5, baseDelay: .seconds(1), maxDelay: .seconds(60))

    /// The situations: each state, and each way a running transfer can be being stopped.
    static let situations: [(String, Life)] = [
        ("idle", Life(id: "a", state: .idle)),
        ("queued", Life(id: "a", state: .queued, bytesOnDisk: 10)),
        ("paused", Life(id: "a", state: .paused, attempts: 2, bytesOnDisk: 10, validator: validator)),
        ("retry", Life(id: "a", state: .retry, attempts: 2, retryAt: Date(timeIntervalSince1970: 100), bytesOnDisk: 10)),
        ("network", Life(id: "a", state: .network, bytesOnDisk: 10)),
        ("downloading", Life(id: "a", state: .downloading, bytesOnDisk: 10)),
        ("downloading/pause", Life(id: "a", state: .downloading, bytesOnDisk: 10, stop: .pause)),
        ("downloading/pause+restart", Life(id: "a", state: .downloading, bytesOnDisk: 10, stop: .pause, restartAfterStop: true)),
        ("downloading/cancel", Life(id: "a", state: .downloading, bytesOnDisk: 10, stop: .cancel)),
        ("downloading/cancel+restart", Life(id: "a", state: .downloading, bytesOnDisk: 10, stop: .cancel, restartAfterStop: true)),
        ("downloading/network", Life(id: "a", state: .downloading, bytesOnDisk: 10, stop: .network)),
        ("downloading/close", Life(id: "a", state: .downloading, bytesOnDisk: 10, stop: .close)),
        ("downloading/storage", Life(id: "a", state: .downloading, detail: "disk full", bytesOnDisk: 10, stop: .storage)),
        ("downloading/remove", Life(id: "a", state: .downloading, bytesOnDisk: 10, stop: .remove)),
        ("finished", Life(id: "a", state: .finished, bytesOnDisk: 20, expectedBytes: 20)),
        ("finished delivering", Life(id: "a", state: .finished, bytesOnDisk: 20, expectedBytes: 20, delivering: true)),
        ("finished recording", Life(id: "a", state: .finished, bytesOnDisk: 20, expectedBytes: 20, recordingDelivery: true)),
        ("delivered delivering", Life(id: "a", state: .delivered, bytesOnDisk: 20, delivering: true)),
        ("delivered", Life(id: "a", state: .delivered, bytesOnDisk: 20)),
        ("failed", Life(id: "a", state: .failed, detail: "404", bytesOnDisk: 10, failure: LibraryError(.transport, "404"))),
        ("cancelled", Life(id: "a", state: .cancelled)),
    ]

    static func failure(retryable: Bool, written: Int64) -> Life.TransferFailure {
        Life.TransferFailure(
            error: LibraryError(.transport, retryable ? "connection reset" : "404 Not Found", isRetryable: retryable),
            retryAfter: nil, written: written, validator: validator, at: Date(timeIntervalSince1970: 1000),
            uptime: .seconds(50), policy: policy, jitter: 1)
    }

    /// Every event, by name; `running`: whether the situation has a transfer running.
    static func events(running: Bool) -> [(String, Life.Event)] {
        [
            ("download", .download),
            ("pause", .pause),
            ("cancel", .cancel),
            ("remove", .remove(running: running)),
            ("checksumChanged", .checksumChanged),
            ("close", .close(running: running)),
            ("start", .start(uptime: .seconds(5))),
            ("networkRefused", .networkRefused),
            ("networkAllows", .networkChanged(allowed: true)),
            ("networkForbids", .networkChanged(allowed: false)),
            ("retryDue", .retryDue),
            ("recordingFailed", .recordingFailed(LibraryError(.storage, "asset a: disk I/O error"))),
            ("transferFinished", .transferFinished(size: 20, validator: validator, inIssue: false, deliversItself: false, hasDelegates: true)),
            ("transferStopped", .transferStopped(written: 15, validator: validator)),
            ("transferFailed", .transferFailed(failure(retryable: true, written: 10))),
            ("transferFailedFatally", .transferFailed(failure(retryable: false, written: 10))),
            ("deliveryStarted", .deliveryStarted),
            ("deliveryKept", .deliveryKept),
            ("deliveryFailed", .deliveryFailed(LibraryError(.invalidPath, "bad zip"))),
            ("deliveryCompleted", .deliveryCompleted),
            ("deliveryRecorded", .deliveryRecorded),
            ("deliveryUnrecorded", .deliveryUnrecorded(LibraryError(.storage, "disk I/O error"))),
            ("deliverySettled", .deliverySettled),
            ("reopened", .reopened(inbox: nil, partial: 12, unpacks: false)),
            ("reopenedFinished", .reopened(inbox: 20, partial: nil, unpacks: false)),
            ("reopenedUnpacked", .reopened(inbox: nil, partial: nil, unpacks: true)),
            ("destinationHolds", .destinationChecked(holdsFile: true)),
            ("destinationEmpty", .destinationChecked(holdsFile: false)),
            ("partialVerified", .partialVerified(length: 12)),
        ]
    }

    /// What each situation does with each event it accepts: the situation after it, a colon, the
    /// actions. Every pair not listed must be refused: nothing changes, nothing to carry out.
    static let accepted: [String: [String: String]] = {
        let cancelNow = "cancelled: cancelRetry bytes removePartial end:cancelled tell:current"
        let removeNow = "cancelled: cancelRetry merge tell:current forget"
        let queueNow = "queued: record:queued enqueue"
        let pauseNow = "paused: cancelRetry record:paused"
        let failNow = "failed: cancelRetry tell:current record:failed"
        let finishedRun = "finished delivering: restore bytes record:finished deliver"
        let retryRun = "retry: restore bytes log record:retry retryAt"
        let failedRun = "failed: restore bytes end:failed tell:current"
        let removedRun = "cancelled: merge tell:current forget"
        let pauseRun = "downloading/pause: record:paused merge stop"
        let cancelRun = "downloading/cancel: merge stop record:cancelled"
        let storageRun = "downloading/storage: stop"
        func running(_ stop: String) -> [String: String] {
            [
                "pause": pauseRun, "cancel": cancelRun, "remove": "downloading/remove: cancelRetry stop",
                "close": "downloading/\(stop): cancelRetry stop", "recordingFailed": storageRun,
                "transferFinished": finishedRun,
            ]
        }
        func merged(_ base: [String: String], _ more: [String: String]) -> [String: String] {
            base.merging(more) { $1 }
        }
        // At open (a lifecycle read from its row): what the files on disk say.
        func reopened(_ state: String, shorter: Bool = true, longer: Bool = true) -> [String: String] {
            var table = ["reopenedFinished": "finished: removePartial record:finished"]
            if longer {
                table["reopened"] = "\(state): verifyPartial"
                table["partialVerified"] = "\(state): log record:-"
            }
            if shorter { table["reopenedUnpacked"] = "\(state): log record:-" }
            return table
        }
        return [
            "idle": merged(reopened("idle", shorter: false), [
                "download": queueNow, "pause": pauseNow, "cancel": cancelNow, "remove": removeNow, "close": "idle: cancelRetry",
            ]),
            "queued": merged(reopened("queued"), [
                "pause": pauseNow, "cancel": cancelNow, "remove": removeNow, "close": "queued: cancelRetry",
                "start": "downloading: start record:downloading", "networkRefused": "network: record:network",
                "recordingFailed": failNow,
            ]),
            "paused": merged(reopened("paused"), [
                "download": queueNow, "cancel": cancelNow, "remove": removeNow, "close": "paused: cancelRetry",
            ]),
            "retry": merged(reopened("retry"), [
                "pause": pauseNow, "cancel": cancelNow, "remove": removeNow, "close": "retry: cancelRetry",
                "retryDue": "queued: enqueue record:queued", "recordingFailed": failNow,
            ]),
            "network": merged(reopened("network"), [
                "pause": pauseNow, "cancel": cancelNow, "remove": removeNow, "close": "network: cancelRetry",
                "networkAllows": "queued: enqueue record:queued", "recordingFailed": failNow,
            ]),
            "downloading": merged(reopened("downloading"), [
                "pause": pauseRun, "cancel": cancelRun, "remove": "downloading/remove: cancelRetry stop",
                "checksumChanged": "downloading/pause+restart: stop", "close": "downloading/close: cancelRetry stop",
                "networkForbids": "downloading/network: stop", "recordingFailed": storageRun,
                "transferFinished": finishedRun, "transferStopped": "paused: record:paused",
                "transferFailed": retryRun, "transferFailedFatally": failedRun,
            ]),
            "downloading/pause": merged(running("pause"), [
                "download": "downloading/pause+restart: record:queued",
                "transferStopped": "paused: record:paused", "transferFailed": "paused: record:paused",
                "transferFailedFatally": "paused: record:paused",
            ]),
            "downloading/pause+restart": merged(running("pause+restart"), [
                "download": "downloading/pause+restart: record:queued",
                "remove": "downloading/remove+restart: cancelRetry stop",
                "transferStopped": "queued: record:queued enqueue", "transferFailed": "queued: record:queued enqueue",
                "transferFailedFatally": "queued: record:queued enqueue",
            ]),
            "downloading/cancel": merged(running("cancel"), [
                "download": "downloading/cancel+restart: record:queued", "pause": "downloading/cancel: merge stop",
                "transferStopped": "cancelled: bytes removePartial end:cancelled tell:current",
                "transferFailed": "cancelled: bytes removePartial end:cancelled tell:current",
                "transferFailedFatally": "cancelled: bytes removePartial end:cancelled tell:current",
            ]),
            "downloading/cancel+restart": merged(running("cancel+restart"), [
                "download": "downloading/cancel+restart: record:queued", "pause": "downloading/cancel: merge stop",
                "remove": "downloading/remove+restart: cancelRetry stop",
                "transferStopped": "queued: bytes removePartial record:queued tell:cancelled enqueue",
                "transferFailed": "queued: bytes removePartial record:queued tell:cancelled enqueue",
                "transferFailedFatally": "queued: bytes removePartial record:queued tell:cancelled enqueue",
            ]),
            "downloading/network": merged(running("network"), [
                "transferStopped": "network: record:network", "transferFailed": retryRun, "transferFailedFatally": failedRun,
            ]),
            "downloading/close": merged(running("close"), [
                "transferStopped": "queued: record:queued", "transferFailed": retryRun, "transferFailedFatally": failedRun,
            ]),
            "downloading/storage": merged(running("storage"), [
                "transferStopped": "failed: record:failed tell:current", "transferFailed": "failed: record:failed tell:current",
                "transferFailedFatally": "failed: record:failed tell:current",
            ]),
            "downloading/remove": merged(running("remove"), [
                "transferFinished": removedRun, "transferStopped": removedRun, "transferFailed": removedRun,
                "transferFailedFatally": removedRun,
            ]),
            "finished": [
                "download": "finished: startDelivery", "remove": removeNow, "close": "finished: cancelRetry",
                "deliveryStarted": "finished delivering: deliver", "reopened": "finished: checkDestination",
                "reopenedUnpacked": "delivered: record:delivered", "destinationHolds": "delivered: record:delivered",
                "destinationEmpty": "queued: log record:queued",
            ],
            "finished delivering": [
                "remove": removeNow, "close": "finished delivering: cancelRetry", "deliveryKept": "finished: ",
                "deliveryFailed": "failed: end:failed", "deliveryCompleted": "finished recording: recordDelivery",
            ],
            "finished recording": [
                "remove": removeNow, "close": "finished recording: cancelRetry",
                "deliveryRecorded": "delivered delivering: drop", "deliveryUnrecorded": "failed: ",
            ],
            "delivered delivering": [
                "remove": removeNow, "close": "delivered delivering: cancelRetry", "deliverySettled": "delivered: forget",
            ],
            "delivered": ["remove": removeNow, "close": "delivered: cancelRetry"],
            "failed": merged(reopened("failed"), [
                "download": queueNow, "cancel": cancelNow, "remove": removeNow, "close": "failed: cancelRetry",
            ]),
            "cancelled": [
                "download": queueNow, "remove": removeNow, "close": "cancelled: cancelRetry",
                "reopened": "cancelled: removePartial record:cancelled", "reopenedFinished": "finished: removePartial record:finished",
            ],
        ]
    }()

    static func describe(_ life: Life) -> String {
        var text = "\(life.state)"
        if let stop = life.stop { text += "/\(stop)" }
        if life.restartAfterStop { text += "+restart" }
        if life.recordingDelivery { text += " recording" } else if life.delivering { text += " delivering" }
        return text
    }

    static func describe(_ action: Life.Action) -> String {
        switch action {
        case .record(let patch): "record:\(patch.state.map { "\($0)" } ?? "-")"
        case .recordEnd(let patch): "end:\(patch.state.map { "\($0)" } ?? "-")"
        case .recordDelivery: "recordDelivery"
        case .enqueue: "enqueue"
        case .startTransfer: "start"
        case .stopTransfer: "stop"
        case .cancelRetry: "cancelRetry"
        case .scheduleRetry: "retryAt"
        case .removePartial: "removePartial"
        case .showBytes: "bytes"
        case .startDelivery: "startDelivery"
        case .deliver(let inPlace): inPlace ? "deliverInPlace" : "deliver"
        case .tell(_, let delegates): "tell:\(delegates)"
        case .dropDelegates: "drop"
        case .mergeCancelledDelegates: "merge"
        case .restoreCancelledDelegates: "restore"
        case .forget: "forget"
        case .log: "log"
        case .checkDestination: "checkDestination"
        case .verifyPartial: "verifyPartial"
        }
    }

    // MARK: The table

    @Test func everySituationAgainstEveryEvent() {
        var pairs = 0
        for (name, life) in Self.situations {
            let expectations = Self.accepted[name] ?? [:]
            let events = Self.events(running: life.state == .downloading)
            let eventNames = Set(events.map(\.0))
            for listed in expectations.keys {
                #expect(eventNames.contains(listed), "\(name): the table lists an unknown event \(listed)")
            }
            for (eventName, event) in events {
                pairs += 1
                var after = life
                let actions = after.handle(event)
                if let expected = expectations[eventName] {
                    let seen = "\(Self.describe(after)): \(actions.map(Self.describe).joined(separator: " "))"
                    #expect(seen == expected, "\(name) × \(eventName)")
                } else {
                    #expect(after == life, "\(name) × \(eventName) must be refused, changed to \(Self.describe(after))")
                    #expect(actions.isEmpty, "\(name) × \(eventName) must be refused, asked for \(actions.map(Self.describe))")
                }
            }
        }
        #expect(pairs == Self.situations.count * Self.events(running: false).count)
        // Every state is among the situations.
        #expect(Set(Self.situations.map(\.1.state)) == Set(PersistedState.allCases))
    }

    @Test func aFailureWithAttemptsLeftRetriesAtTheDateThePolicyDecides() {
        var life = Life(id: "a", state: .downloading, attempts: 1, progressClock: .seconds(40), bytesOnDisk: 10)
        let failure = Self.failure(retryable: true, written: 10)
        let actions = life.handle(.transferFailed(failure))
        // Two attempts without progress: 2 s, its random half at 1.
        let date = failure.at.addingTimeInterval(2)
        #expect(life.state == .retry)
        #expect(life.attempts == 2)
        #expect(life.retryAt == date)
        var patch = AssetPatch(id: "a")
        patch.state = .retry
        patch.retryAt = .some(date)
        patch.attempts = 2
        patch.detail = .some("connection reset")
        #expect(actions.contains(.record(patch)))
        #expect(actions.last == .scheduleRetry(at: date, now: failure.at))
    }

    @Test func aFailureThatMadeProgressStartsTheCountAfresh() {
        var life = Life(id: "a", state: .downloading, attempts: 4, bytesOnDisk: 10)
        _ = life.handle(.transferFailed(Self.failure(retryable: true, written: 30)))
        #expect(life.state == .retry)
        #expect(life.attempts == 0)
        #expect(life.progressClock == .seconds(50))
        #expect(life.bytesOnDisk == 30)
    }

    /// A split download whose gap-free prefix did not move but whose recorded pieces grew made
    /// progress: its retries start afresh (they ran out before, while the pieces grew).
    @Test func aFailureThatOnlyGrewItsPiecesStartsTheCountAfresh() {
        var life = Life(id: "a", state: .downloading, attempts: 4, bytesOnDisk: 10)
        var failure = Self.failure(retryable: true, written: 10)
        failure.piecesGrew = true
        _ = life.handle(.transferFailed(failure))
        #expect(life.state == .retry)
        #expect(life.attempts == 0)
        #expect(life.progressClock == .seconds(50))
        #expect(life.bytesOnDisk == 10)
    }

    @Test func theLastAttemptWithoutProgressGivesUpAndRecordsWhy() {
        var life = Life(id: "a", state: .downloading, attempts: 4, bytesOnDisk: 10)
        let actions = life.handle(.transferFailed(Self.failure(retryable: true, written: 10)))
        let message = "connection reset (gave up after 5 attempts without progress)"
        #expect(life.state == .failed)
        #expect(life.failure?.message == message)
        guard case .recordEnd(let patch) = actions.first(where: { if case .recordEnd = $0 { true } else { false } }) else {
            Issue.record("no end recorded: \(actions)")
            return
        }
        #expect(patch.state == .failed)
        #expect(patch.detail == .some(message))
        #expect(patch.failure == .some(StoredFailure(life.failure!)))
    }

    @Test func theRetryPolicyGivesUpPastTheNoProgressTimeout() {
        var policy = Self.policy
        policy.noProgressTimeout = .seconds(10)
        #expect(policy.decision(afterFailedAttempts: 1, isRetryable: true, retryAfter: nil, withoutProgressFor: .seconds(5),
                                random: 0) == .retry(after: .milliseconds(500)))
        #expect(policy.decision(afterFailedAttempts: 1, isRetryable: true, retryAfter: nil, withoutProgressFor: .seconds(10),
                                random: 0) == .giveUp(reason: "gave up: no progress within the 10 s no-progress timeout"))
        #expect(policy.decision(afterFailedAttempts: 1, isRetryable: false, retryAfter: nil, withoutProgressFor: .zero,
                                random: 0) == .giveUp(reason: nil))
        #expect(policy.decision(afterFailedAttempts: 5, isRetryable: true, retryAfter: nil, withoutProgressFor: .zero,
                                random: 0) == .giveUp(reason: "gave up after 5 attempts without progress"))
    }

    @Test func aReloadedRetryGetsItsNoProgressClockBack() {
        var life = Life(id: "a", state: .retry, attempts: 1)
        #expect(life.handle(.reloaded(progressClock: .seconds(7))).isEmpty)
        #expect(life.progressClock == .seconds(7))
        #expect(life.state == .retry)
    }

    @Test func aQueuedRowAskedForAgainKeepsThePausedCountOnly() {
        var paused = Life(id: "a", state: .paused, attempts: 3)
        var failed = Life(id: "a", state: .failed, attempts: 3, failure: LibraryError(.transport, "x"))
        var expected = AssetPatch(id: "a")
        expected.state = .queued
        expected.detail = .some(nil)
        expected.attempts = 3
        #expect(paused.handle(.download).first == .record(expected))
        expected.attempts = 0
        #expect(failed.handle(.download).first == .record(expected))
        #expect(failed.failure == nil)
    }

    /// The changes the store makes in bulk agree with the lifecycle of one asset read from its row.
    @Test func theStoresBulkChangesAgreeWithTheLifecycle() {
        func after(_ state: PersistedState, _ events: [Life.Event]) -> PersistedState {
            var life = Life(id: "a", state: state, bytesOnDisk: 10)
            for event in events { _ = life.handle(event) }
            return life.state
        }
        let stopped = Life.Event.transferStopped(written: 10, validator: nil)
        // At open, what ran stops as by closing (it continues) or by a pause (it waits).
        let atOpen: [Bool: [PersistedState: [Life.Event]]] = [
            true: [.downloading: [.close(running: true), stopped], .network: [.networkChanged(allowed: true)]],
            false: [.downloading: [.pause, stopped], .network: [.networkChanged(allowed: true)]],
        ]
        for resume in [true, false] {
            let changes = Life.changesAtOpen(resume: resume)
            #expect(Set(changes.flatMap(\.from)) == Set(atOpen[resume]!.keys))
            for change in changes {
                for state in change.from {
                    #expect(after(state, atOpen[resume]![state]!) == change.to, "at open (resume: \(resume)) from \(state)")
                }
            }
        }
        let network = Life.storedNetworkWaitsChecked
        #expect(network.from.allSatisfy { after($0, [.networkChanged(allowed: true)]) == network.to })
        let retries = Life.storedRetriesDue
        #expect(retries.from.allSatisfy { after($0, [.retryDue]) == retries.to })
    }

    // MARK: Invariants over random runs

    /// One step of a random run: an event made from two numbers, the bytes always physically
    /// possible (a transfer ends at or past the durable count, or restarted from zero).
    static func event(_ code: Int, _ parameter: Int, life: Life) -> (Life.Event, restartedFromZero: Bool) {
        let running = life.state == .downloading
        let grown = life.bytesOnDisk + Int64(parameter % 50)
        let restarted = parameter % 7 == 0
        let written = restarted ? Int64(parameter % 5) : grown
        let failure = Life.TransferFailure(
            error: LibraryError(.transport, "failure \(parameter)", isRetryable: parameter % 3 != 0),
            retryAfter: parameter % 4 == 0 ? .seconds(parameter % 100) : nil, written: written, validator: nil,
            at: Date(timeIntervalSince1970: Double(parameter)), uptime: .seconds(parameter), policy: policy,
            jitter: Double(parameter % 11) / 10)
        let events: [Life.Event] = [
            .download, .pause, .cancel, .remove(running: running), .checksumChanged, .close(running: running),
            .start(uptime: .seconds(parameter)), .networkRefused, .networkChanged(allowed: parameter % 2 == 0), .retryDue,
            .recordingFailed(LibraryError(.storage, "store \(parameter)")), .reloaded(progressClock: .seconds(parameter)),
            .transferFinished(size: grown, validator: nil, inIssue: parameter % 2 == 0, deliversItself: parameter % 3 == 0,
                              hasDelegates: parameter % 5 == 0),
            .transferStopped(written: written, validator: nil), .transferFailed(failure),
            .deliveryStarted, .deliveryKept, .deliveryFailed(LibraryError(.invalidPath, "unpack \(parameter)")),
            .deliveryCompleted, .deliveryRecorded, .deliveryUnrecorded(LibraryError(.storage, "refused")), .deliverySettled,
            // At open: a partial file as long as recorded or longer, or none (then from zero).
            .reopened(inbox: parameter % 2 == 0 ? grown : nil, partial: parameter % 3 == 0 ? nil : grown,
                      unpacks: parameter % 5 == 0),
            .destinationChecked(holdsFile: parameter % 2 == 0), .partialVerified(length: grown),
        ]
        let event = events[code % events.count]
        let fromZero: Bool
        switch event {
        case .transferStopped, .transferFailed: fromZero = restarted
        default: fromZero = false
        }
        return (event, fromZero)
    }

    static let runs = Gen.int(in: 0...(Self.situations.count - 1))
    static let steps = Gen.int(in: 0...1_000).array(of: 1...60)

    @Test func invariantsHoldOverRandomRuns() async {
        await propertyCheck(count: 1_000, input: Self.runs, Self.steps) { start, codes in
            var life = Self.situations[start].1
            // The asset's row, as the patches asked for leave it.
            var row: PersistedState? = life.state
            var forgotten = false
            var unrecordedFailure = false
            var deliveries = 0
            var storedBytes = life.bytesOnDisk
            for (index, code) in codes.enumerated() {
                let before = life
                let (event, fromZero) = Self.event(code, codes[(index + 1) % codes.count] &* 7 &+ index, life: life)
                let actions = life.handle(event)
                if before.state == .downloading, fromZero {
                    // The transfer's own records (progress bypasses the lifecycle): it restarted from zero.
                    storedBytes = 0
                }
                let context = "run from \(Self.situations[start].0): \(event) on \(Self.describe(before)) -> \(Self.describe(life)) \(actions.map(Self.describe))"

                for action in actions {
                    switch action {
                    case .record(let patch), .recordEnd(let patch), .recordDelivery(let patch):
                        if let state = patch.state { row = state }
                        if let bytes = patch.bytesOnDisk {
                            // Bytes recorded never go backwards, but to zero.
                            #expect(bytes >= storedBytes || bytes == 0, "\(context)")
                            storedBytes = bytes
                        }
                    case .forget:
                        forgotten = true
                    default:
                        break
                    }
                }
                if case .deliveryUnrecorded = event, life.state == .failed { unrecordedFailure = true }
                if life.state != .failed { unrecordedFailure = false }

                // None delivered twice: one delivery at a time, and delivered once.
                if actions.contains(where: { if case .deliver = $0 { true } else { false } }) {
                    #expect(!before.delivering && life.delivering, "\(context)")
                }
                if before.state != .delivered, life.state == .delivered { deliveries += 1 }
                #expect(deliveries <= 1, "\(context)")
                if before.state == .delivered { #expect(life.state == .delivered || life.state == .cancelled, "\(context)") }

                // Bytes never go backwards except on a restart from zero.
                if life.bytesOnDisk < before.bytesOnDisk {
                    let restart = fromZero || life.bytesOnDisk == 0
                    #expect(restart, "\(context)")
                }

                // A failure is always recorded: in memory while failed, and in the patch that fails it.
                #expect((life.state == .failed) == (life.failure != nil), "\(context)")
                if life.state == .failed, before.state != .failed, !unrecordedFailure {
                    let recorded = actions.contains { action in
                        switch action {
                        case .record(let patch), .recordEnd(let patch):
                            patch.state == .failed && patch.failure == .some(StoredFailure(life.failure!))
                                && patch.detail == .some(life.failure!.message)
                        default: false
                        }
                    }
                    #expect(recorded, "\(context)")
                }

                // No asset lost: it is in exactly one state, and unless a stop or a delivery is on
                // its way, its row says the same (a waiting asset waits where it can be found).
                if !forgotten, life.stop == nil, !life.delivering, !unrecordedFailure {
                    #expect(row == life.state, "\(context): the row says \(row.map { "\($0)" } ?? "nothing")")
                }
                if before.state != life.state {
                    switch life.state {
                    case .queued:
                        // In line in memory, or in the store's backlog (read at the next open).
                        let recorded = actions.contains { if case .record(let patch) = $0 { patch.state == .queued } else { false } }
                        #expect(actions.contains(.enqueue) || recorded, "\(context)")
                    case .retry:
                        #expect(actions.contains { if case .scheduleRetry = $0 { true } else { false } }, "\(context)")
                    case .downloading:
                        #expect(actions.contains(.startTransfer), "\(context)")
                    default:
                        break
                    }
                }
                if forgotten { break }
            }
        }
    }
}
