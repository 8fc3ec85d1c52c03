import Foundation
import Logging

// What happens to an asset, and what the scheduler carries out for it (see ``AssetLifecycle``).
extension AssetLifecycle {
    /// What happened to the asset.
    enum Event: Sendable, Equatable {
        /// The app asked for it (again): a download, a reconnect.
        case download
        case pause
        case cancel
        /// Its issue is removed; `running`: a transfer of it runs.
        case remove(running: Bool)
        /// Its expected checksum changed: a running transfer starts again under the new one.
        case checksumChanged
        /// The library closes; `running`: a transfer of it runs.
        case close(running: Bool)
        /// Its turn came (it was queued) and the network allows it: the transfer starts, at `uptime`.
        case start(uptime: Duration)
        /// Its turn came (it was queued) but the network does not allow it.
        case networkRefused
        /// The network changed; `allowed`: whether the new one allows this asset.
        case networkChanged(allowed: Bool)
        /// Its retry is due.
        case retryDue
        /// The store gave up recording its updates.
        case recordingFailed(LibraryError)
        /// The no-progress clock of a retry that waited in the store, given back.
        case reloaded(progressClock: Duration)
        /// The transfer completed, verified and in place (`inIssue`: at its destination already).
        /// `deliversItself`: the request has somewhere to go without a delegate; `hasDelegates`:
        /// a delegate is attached.
        case transferFinished(size: Int64, validator: ResourceValidator?, inIssue: Bool, deliversItself: Bool,
                              hasDelegates: Bool)
        /// The transfer stopped as asked (pause, cancel, network, close, storage); `written`
        /// bytes are durable.
        case transferStopped(written: Int64, validator: ResourceValidator?)
        case transferFailed(TransferFailure)
        /// A delivery starts (asked for by a download of a finished asset).
        case deliveryStarted
        /// The delivery ended without delivering: a delegate kept the file, or nobody took it.
        case deliveryKept
        /// The delivery failed (an unpack, a move into the issue folder).
        case deliveryFailed(LibraryError)
        /// The delivery is done: its record is to be written.
        case deliveryCompleted
        /// The record of the delivery is written.
        case deliveryRecorded
        /// The store could not write the record of the delivery (the file is in place).
        case deliveryUnrecorded(LibraryError)
        /// Everything a delivery records (the issue's cover, its new mark) is written.
        case deliverySettled
        /// The library opens, with what is on disk of the asset (see ``Reconciler``): the size of
        /// its file in the inbox and of its partial file (`nil`: none); `unpacks`: its request
        /// unpacks an archive.
        case reopened(inbox: Int64?, partial: Int64?, unpacks: Bool)
        /// Whether the destination holds the file of a finished asset whose inbox is empty
        /// (asked for by ``Action/checkDestination``).
        case destinationChecked(holdsFile: Bool)
        /// The partial file's `length` bytes, more than recorded, are good and durable (asked for
        /// by ``Action/verifyPartial(length:)``).
        case partialVerified(length: Int64)
    }

    /// A failed attempt, with what the retry decision needs.
    struct TransferFailure: Sendable, Equatable {
        var error: LibraryError
        var retryAfter: Duration?
        /// Bytes durable on disk, from which the next attempt continues.
        var written: Int64
        var validator: ResourceValidator?
        /// Bytes in the pieces recorded past ``written`` (a split download's): kept too, and
        /// shown in the progress count.
        var pieceBytes: Int64 = 0
        /// Whether the attempt recorded more bytes in pieces past ``written`` than it started
        /// with (a split download whose gap-free prefix did not move): progress all the same.
        var piecesGrew = false
        /// When it failed, on the clock's wall time: a retry's date counts from it.
        var at: Date
        /// When it failed, on the clock's ``LibraryClock/uptime``: the no-progress clock.
        var uptime: Duration
        var policy: RetryPolicy
        /// The random part of the backoff, in 0...1 (see ``RetryPolicy/delay(afterFailedAttempts:retryAfter:random:)``).
        var jitter: Double
    }

    /// Whose delegates hear an end.
    enum Delegates: Sendable, Equatable {
        /// The asset's delegates.
        case current
        /// Those of a download cancelled while a new one was asked for.
        case cancelled
    }

    /// What the scheduler carries out, in order.
    enum Action: Sendable, Equatable {
        /// Writes the patch (batched with others).
        case record(AssetPatch)
        /// Writes the patch that ends the asset (failed, cancelled); the app hears of the end
        /// (``tell(_:_:)``, waits, events) once it is committed.
        case recordEnd(AssetPatch)
        /// Writes the patch of a delivery; ``Event/deliveryRecorded`` follows once it is written.
        case recordDelivery(AssetPatch)
        /// Joins the line of assets waiting for a transfer.
        case enqueue
        case startTransfer
        case stopTransfer
        /// Cancels a timed retry in memory.
        case cancelRetry
        /// Times the retry for `date`, as seen at `now`.
        case scheduleRetry(at: Date, now: Date)
        /// Removes the partial file.
        case removePartial
        /// Shows these figures to the app's progress (`nil`: unchanged).
        case showBytes(written: Int64?, expected: Int64?)
        /// Starts a delivery (``Event/deliveryStarted``).
        case startDelivery
        /// Delivers the finished file; `inPlace`: it is in its destination and nobody is to be
        /// handed it, so only its record is written.
        case deliver(inPlace: Bool)
        /// These delegates hear that the asset ended with `error`, and are let go.
        case tell(LibraryError, Delegates)
        /// Lets the delegates go (delivered).
        case dropDelegates
        /// The delegates of a cancelled download join the current ones, to hear what ends the transfer.
        case mergeCancelledDelegates
        /// A pause or a cancel came too late (the transfer ended on its own): the cancelled
        /// download's delegates are the asset's again.
        case restoreCancelledDelegates
        /// Lets the asset go from memory (its issue is removed).
        case forget
        case log(Logger.Level, String)
        /// Checks whether the destination holds the file (``Event/destinationChecked(holdsFile:)``).
        case checkDestination
        /// Checks whether the partial file's `length` bytes, more than recorded, were written in
        /// order in this boot, and makes them durable (``Event/partialVerified(length:)``).
        case verifyPartial(length: Int64)
    }
}

// Changes the store makes to many rows at once, in one statement, without reading them (a library
// of a million assets opens, and its retries come due, in the time its few changed ones take):
// each the same as what the lifecycle makes of one asset read from its row (`AssetLifecycleTests`
// checks that they agree).
extension AssetLifecycle {
    /// A change of the rows in states `from` to state `to`.
    struct BulkChange: Sendable, Equatable {
        var from: [PersistedState]
        var to: PersistedState
    }

    /// At open: a transfer the last run left running continues (`resume`) or waits paused, as
    /// after a stop by closing or by a pause; an asset waiting for a network is queued, to be
    /// checked against the network when paged in.
    static func changesAtOpen(resume: Bool) -> [BulkChange] {
        resume
            ? [BulkChange(from: [.network, .downloading], to: .queued)]
            : [BulkChange(from: [.network], to: .queued), BulkChange(from: [.downloading], to: .paused)]
    }

    /// The network changed: the assets waiting for one in the store are queued, to be checked
    /// against it when paged in (``Event/networkChanged(allowed:)``, then ``Event/networkRefused``).
    static let storedNetworkWaitsChecked = BulkChange(from: [.network], to: .queued)

    /// Retries due in the store are queued (``Event/retryDue``).
    static let storedRetriesDue = BulkChange(from: [.retry], to: .queued)
}
