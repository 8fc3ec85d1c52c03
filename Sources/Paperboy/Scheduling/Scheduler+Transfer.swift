import Foundation
import Synchronization

extension Scheduler {
    /// What a transfer task needs, copied out of the lock.
    struct Run: Sendable {
        var id: String
        var issueName: String
        var request: AssetRequest
        var bytesOnDisk: Int64
        var validator: ResourceValidator?
        var live: LiveProgress
        var hub: AssetEventHub?
        var limiters: [BandwidthLimiter]
        /// The transfer's place in the global and per-host limits.
        var slot: TransferSlot
    }

    /// A transfer's place in the global and per-host limits, given back exactly once: as soon
    /// as the network part ends for good (making the file durable and moving it need no
    /// connection), or when the transfer ends otherwise.
    final class TransferSlot: Sendable {
        let host: String
        private let held = Atomic<Bool>(true)

        init(host: String) { self.host = host }

        /// `true` the first time only: the caller then gives the place back.
        func take() -> Bool { held.exchange(false, ordering: .acquiringAndReleasing) }
    }

    /// How a transfer ended.
    enum Outcome: Sendable {
        /// Complete, verified, durable, and moved into the inbox, or straight to its destination
        /// in the issue folder when `inIssue`.
        case finished(size: Int64, validator: ResourceValidator?, inIssue: Bool)
        /// Stopped by a pause, a cancel or closing; `written` bytes are durable on disk.
        case stopped(written: Int64, validator: ResourceValidator?)
        /// Failed; `written` bytes are durable on disk and can be continued; `pieceBytes` more
        /// in the pieces recorded past them; `piecesGrew`: those pieces grew in this attempt.
        case failed(LibraryError, retryAfter: Duration?, written: Int64, validator: ResourceValidator?, pieceBytes: Int64 = 0,
                    piecesGrew: Bool = false)
    }

    /// Runs one attempt: opens the partial file, lets the transport fill it, verifies it, and
    /// moves it into the inbox (or, with a destination and no delegate, straight there).
    ///
    /// An attempt that did not finish and leaves an empty partial file (a 404, a refused
    /// credential, a checksum mismatch, a stop before the first byte) removes it: only bytes to
    /// resume from are kept, and the next attempt creates the file again. A failed attempt's
    /// bytes that nothing can resume from (no validator, or a transport that cannot resume)
    /// are dropped with it.
    func transfer(_ run: Run) async -> Outcome {
        let outcome = await attempt(run)
        if case .finished = outcome {} else { POSIX.removeIfEmpty(layout.partialURL(asset: run.id)) }
        return outcome
    }

    private func attempt(_ run: Run) async -> Outcome {
        if run.request.url == AssetRecord.unreadableURL {
            let error = LibraryError(.storage, "the stored request of asset \(run.id) is unreadable; remove and add the asset again", isRetryable: false)
            return .failed(error, retryAfter: nil, written: 0, validator: nil)
        }
        let transport: any Transport
        do {
            transport = try transports.transport(for: run.request.url)
        } catch {
            return .failed(Self.libraryError(error), retryAfter: nil, written: run.bytesOnDisk, validator: run.validator)
        }
        let partial = layout.partialURL(asset: run.id)
        // Ranges past the bytes without a gap that a transfer over several connections recorded
        // (``RecordedSegments``): only for the version they were recorded with, which a resume
        // must prove (a validator, a transport that resumes).
        var held = RecordedSegments.none
        var recordedHeld: RecordedSegments?
        if run.validator != nil, let record = store.asset(id: run.id), let segments = record.segments {
            recordedHeld = segments
            if record.resourceValidator == run.validator, run.request.index == nil, transport.capabilities.contains(.resume) {
                held = segments
            }
        }
        // With no bytes recorded, none on disk are trusted: the file is emptied as it is opened
        // (the common case, a new file: no `fstat`, one system call fewer per asset).
        let recordsNothing = run.bytesOnDisk == 0 && held.isEmpty
        let fd: Int32
        do {
            fd = try POSIX.openReadWrite(partial, truncating: recordsNothing)
        } catch {
            return .failed(error, retryAfter: nil, written: run.bytesOnDisk, validator: run.validator)
        }
        var open = true
        defer { if open { POSIX.closeFile(fd) } }

        // Only bytes recorded as durable count, and only if they are still there; and only a
        // validated resume is allowed, so that two versions are never spliced.
        let size = recordsNothing ? 0 : POSIX.fileSize(fd)
        var offset = min(run.bytesOnDisk, size)
        var validator = run.validator
        if offset > 0, validator == nil || !transport.capabilities.contains(.resume) {
            offset = 0
            validator = nil
        }
        // Only the held ranges still in the file, past the bytes the transfer continues from.
        held = validator == nil ? .none : held.trusted(after: offset, within: size)
        if let recordedHeld, recordedHeld != held {
            // The record claims only the ranges kept, before the file is cut below.
            var patch = AssetPatch(id: run.id)
            patch.segments = .some(held.isEmpty ? nil : held)
            store.submit(patch)
            store.flush()
        }
        // An indexed asset continues from a whole chunk of the same version (its index's SHA-256
        // is its validator), and takes the chunks it holds from the version delivered before.
        var chunked: ChunkedTransfer?
        if let indexURL = run.request.index, transport.capabilities.contains(.ranges) {
            do {
                chunked = try await prepareChunks(indexURL, run: run)
            } catch {
                return .failed(Self.libraryError(error), retryAfter: (error as? TransportError)?.retryAfter, written: run.bytesOnDisk, validator: run.validator)
            }
            if let index = chunked?.plan.index, validator == index.validator {
                offset = index.boundary(atOrBelow: offset)
            } else {
                offset = 0
                validator = nil
            }
        }
        let chunkedTransfer = chunked
        // A new, empty partial file (the common case) needs neither truncating nor seeking.
        // Held ranges stay in the file; the transfer writes on from `offset`.
        guard size == 0 || POSIX.truncate(fd, to: max(offset, held.ranges.last?.upperBound ?? 0), position: offset) else {
            let error = LibraryError(.storage, SystemFailure.message("cannot truncate", partial.path))
            return .failed(error, retryAfter: nil, written: 0, validator: nil)
        }

        var request = run.request
        if offset > 0, let hub = run.hub, hub.hasDelegates {
            let refreshed = await hub.willResume(with: request)
            if refreshed != request, let valid = try? refreshed.validated() {
                request = valid
                updateRequest(run.id, valid)
            }
        }

        var restarts = 0
        // A resumed transfer whose bytes did not verify: where it resumed and what was wrong.
        var failedResume: (offset: Int64, mismatch: String)?
        /// Drops the bytes on disk and their record, and runs the job again from 0.
        func startOver() {
            offset = 0
            validator = nil
            // The patch below forgets them in the store too (``AssetPatch/segmentsChange``).
            held = .none
            _ = POSIX.truncate(fd, to: 0)
            var patch = AssetPatch(id: run.id)
            patch.bytesOnDisk = 0
            patch.validator = .some(nil)
            store.submit(patch)
            store.flush()
        }
        while true {
            let challenges = ChallengeBudget(url: request.url)
            // An indexed file is checked whole against its index's SHA-256 when the request names none.
            let sha256 = request.sha256 ?? chunkedTransfer?.plan.index.wholeFileSHA256?.description
            let sink = makeSink(fd: fd, partial: partial, run: run, request: request, sha256: sha256, offset: offset, validator: validator,
                                held: held, challenges: challenges)
            defer { sink.endFlows() }
            var made = TransferJob(
                url: request.url, headers: request.headers, offset: offset, validator: validator,
                connectTimeout: settings.connectTimeout, idleTimeout: settings.idleTimeout,
                options: request.options, assetIdentifier: run.id)
            made.connectionsPerAsset = max(1, settings.connectionsPerAsset)
            made.mirrors = request.mirrors
            made.heldRanges = held.ranges
            let job = made
            do {
                try await challenges.run {
                    if let chunked = chunkedTransfer {
                        try await chunked.run(job, transport: transport, into: sink)
                    } else {
                        try await transport.transfer(job, into: sink)
                    }
                }
                // A first resume whose bytes fail their check is fetched again from 0 below, in
                // this attempt (an indexed asset's bad chunks only, whether it resumed or not):
                // that fetch is a transfer too, so the place is kept until then.
                let mayStartOver = (sink.startOffset > 0 || chunkedTransfer != nil) && failedResume == nil
                // Otherwise the source has sent everything: the next transfer may start while these
                // bytes are written, checked, made durable and moved (a failure below retries later).
                if !mayStartOver { releaseSlot(run.slot) }
                await sink.waitForCheckpoints()
                if Task.isCancelled {
                    await sink.recordProgressDurably()
                    return .stopped(written: sink.written, validator: sink.validator)
                }
                var unverified: LibraryError?
                do {
                    try await sink.finish()
                } catch {
                    unverified = error
                }
                if let error = unverified {
                    guard let mismatch = sink.mismatch else { throw error }
                    if let first = failedResume {
                        let discarded = error.code == .checksumMismatch ? "; the file was discarded" : ""
                        let again = chunkedTransfer.map { "its chunks checked against \($0.indexURL.redactedString) and the bad ones fetched again" }
                            ?? "fetched again from 0"
                        let resumed = first.offset > 0 ? "after resuming at byte \(first.offset), " : ""
                        throw LibraryError(error.code, "\(request.url.redactedString): \(resumed)\(first.mismatch); \(again) and \(mismatch)\(discarded)",
                                           isRetryable: error.isRetryable, underlying: error.underlying)
                    }
                    guard mayStartOver else { throw error }
                    failedResume = (sink.startOffset, mismatch)
                    if let chunked = chunkedTransfer {
                        // The index says which bytes are wrong: the transfer continues from the
                        // file's end, which checks every chunk and fetches only the bad ones again.
                        logger.info("asset \(run.id): \(request.url.redactedString): \(mismatch); checking its chunks against \(chunked.indexURL.redactedString)")
                        offset = chunked.plan.index.boundary(atOrBelow: sink.written)
                        validator = sink.validator
                        guard POSIX.truncate(fd, to: offset) else { throw error }
                        continue
                    }
                    // Complete, yet not the resource: a source that kept its validator while its
                    // bytes changed (an ETag made of size and mtime, a date) spliced two versions.
                    // Fetched again from 0 at once; only a second failure fails the asset.
                    logger.info("asset \(run.id): \(request.url.redactedString): after resuming at byte \(sink.startOffset), \(mismatch); fetching it again from 0")
                    startOver()
                    continue
                }
                // A file filled from a zsync control file is checked whole by its SHA-1 too.
                if let chunked = chunkedTransfer { try await chunked.checkWholeFile(fd: fd, length: sink.written, url: request.url) }
                releaseSlot(run.slot)
                if let chunked = chunkedTransfer {
                    let bytes = chunked.bytes
                    let copied = chunked.copied
                    let means = "copying cloned \(copied.cloned) bytes, copied \(copied.copiedInKernel) in the kernel, read and wrote \(copied.copied)"
                    logger.info("asset \(run.id): \(bytes.reused) bytes copied from files the library holds, \(bytes.fetched) fetched (\(chunked.indexURL.redactedString)); \(means)")
                }
                if run.request.index != nil {
                    // What this file cost (``AssetStatus/bytesReused``) and, for a file delivered to a path
                    // of its issue, its chunks (the chunk table: others copy them once it is delivered),
                    // in the batch that records its end.
                    var patch = AssetPatch(id: run.id)
                    patch.bytesReused = chunkedTransfer?.bytes.reused ?? 0
                    let staysWhole = run.request.destinationPath != nil && run.request.unpack == nil
                    // A zsync control file's blocks are not recorded: their truncated MD4s do not
                    // name bytes safely across files.
                    patch.chunks = staysWhole ? (chunkedTransfer?.plan.index as? ChunkIndex)?.chunks ?? [] : []
                    store.submit(patch)
                }
                // When a file system sync covers the file, no descriptor is held while waiting for
                // one (finishing transfers no longer count against the limits, see above).
                let grouped = durability.joinsGroupCommit(size: sink.written)
                if grouped { POSIX.closeFile(fd) }
                await durability.makeDurable(fd: grouped ? -1 : fd, size: sink.written)
                if !grouped { POSIX.closeFile(fd) }
                open = false
                // A file with a destination and nobody to hand it to goes straight there (one
                // rename fewer per asset); otherwise, or if that move fails, into the inbox, and
                // the delivery step hands it over or reports why it cannot.
                if let path = request.destinationPath, request.unpack == nil, !Task.isCancelled, !hasDelegates(run.id),
                   (try? delivery.moveIntoIssue(partial, issueName: run.issueName, path: path)) != nil {
                    return .finished(size: sink.written, validator: sink.validator, inIssue: true)
                }
                try POSIX.rename(partial, layout.inboxURL(asset: run.id, request: request))
                return .finished(size: sink.written, validator: sink.validator, inIssue: false)
            } catch let restart as TransferRestart {
                await sink.waitForCheckpoints()
                restarts += 1
                logger.info("asset \(run.id): \(restart)")
                if restarts > 2 || Task.isCancelled {
                    let error = TransportError(.sourceChanged, "source kept changing while resuming: \(restart.reason)", url: request.url)
                    return .failed(LibraryError(error), retryAfter: nil, written: 0, validator: nil)
                }
                startOver()
                continue
            } catch {
                await sink.waitForCheckpoints()
                if Task.isCancelled || error is CancellationError || (error as? TransportError)?.code == .cancelled {
                    await sink.recordProgressDurably()
                    // Stopped before `begin` (an indexed asset checking its chunks): the bytes
                    // on disk are still those it started from.
                    return .stopped(written: sink.began ? sink.written : offset, validator: sink.began ? sink.validator : validator)
                }
                // The library's own refusal (no space) wins over what the transport made of it.
                let failure = sink.storageRefusal ?? Self.libraryError(error)
                let resumable = (sink.began ? sink.validator : validator) != nil && transport.capabilities.contains(.resume)
                if failure.code == .checksumMismatch || !resumable {
                    // Nothing can continue from these bytes (they are wrong, or no validator
                    // could prove the next attempt fetches the same resource): the disk is freed
                    // now, not when the next attempt starts, which may be never.
                    _ = POSIX.truncate(fd, to: 0)
                    var patch = AssetPatch(id: run.id)
                    patch.bytesOnDisk = 0
                    patch.validator = .some(nil)
                    store.submit(patch)
                    return .failed(failure, retryAfter: (error as? TransportError)?.retryAfter, written: 0, validator: nil)
                }
                await sink.recordProgressDurably()
                return .failed(failure, retryAfter: (error as? TransportError)?.retryAfter,
                               written: sink.began ? sink.written : offset, validator: sink.began ? sink.validator : validator,
                               pieceBytes: sink.began ? sink.recordedPieceBytes.load(ordering: .relaxed) : held.bytes,
                               piecesGrew: sink.began && sink.recordedPieceBytes.load(ordering: .relaxed) > held.bytes)
            }
        }
    }

    private func makeSink(fd: Int32, partial: URL, run: Run, request: AssetRequest, sha256: String?, offset: Int64,
                          validator: ResourceValidator?, held: RecordedSegments, challenges: ChallengeBudget) -> PartialFileSink {
        let id = run.id
        // Looked up on each use, so that a delegate attached mid-transfer gets the events.
        let hub: @Sendable () -> AssetEventHub? = { [weak self] in self?.currentHub(id) }
        let context = PartialFileSink.Context(
            assetID: run.id, partialFile: partial, url: request.url, requestedOffset: offset, recordedValidator: validator,
            held: held,
            expectedSHA256: sha256, progressInterval: settings.progressInterval,
            checkpointInterval: settings.checkpointInterval, clock: settings.clock, bootID: bootID, store: store,
            durability: durability, space: space,
            live: run.live, hub: hub,
            resumed: { [weak self] total, expected in self?.transferResumed(id, total: total, expected: expected) },
            limiters: run.limiters,
            answerChallenge: challengeAnswer(id, challenges: challenges))
        return PartialFileSink(fd: fd, context: context)
    }

    /// How a transfer of asset `id` answers challenges: configured credentials first, then the
    /// app's delegate, within the attempt's budget.
    private func challengeAnswer(_ id: String, challenges: ChallengeBudget) -> @Sendable (AuthChallenge) async -> AuthChallengeDisposition {
        // Looked up on each use, so that a delegate attached mid-transfer gets the events.
        let hub: @Sendable () -> AssetEventHub? = { [weak self] in self?.currentHub(id) }
        let credentials = settings.credentials
        return { challenge in
            guard challenges.admit() else { return .cancelAuthenticationChallenge }
            if challenge.previousFailureCount == 0, let credential = credentials?.credential(for: challenge) {
                return .useCredential(credential)
            }
            if let hub = hub() { return await hub.challenge(challenge) }
            return .performDefaultHandling
        }
    }

    /// Fetches the index of an indexed asset (through the transport of its URL) and plans which
    /// pieces come from the version delivered before to the same path of the same issue, and
    /// which from other delivered assets (the store's chunk table; chunk indexes only). A zsync
    /// control file (an index URL ending in `.zsync`) is planned by a rolling match against that
    /// version alone.
    private func prepareChunks(_ indexURL: URL, run: Run) async throws -> ChunkedTransfer {
        let request = run.request
        let seed = request.destinationPath.map { layout.deliveredURL(issue: run.issueName, path: $0) }
        // The chunks recorded for the file there (read before this asset's own go, below, and
        // off the cooperative pool: a large file has tens of thousands): the plan need not cut
        // it. Unreadable, it is cut.
        let (store, issueName, path) = (self.store, run.issueName, request.destinationPath)
        let recorded = await durability.offload {
            path.flatMap { path in try? store.recordedChunks(ofFileAt: path, inIssue: issueName) }
        }
        // The file this asset finished with before, if any, is being replaced: its chunks go.
        var dropped = AssetPatch(id: run.id)
        dropped.chunks = []
        store.submit(dropped)
        let transport = try transports.transport(for: indexURL)
        let job = TransferJob(
            url: indexURL, headers: request.headers, connectTimeout: settings.connectTimeout, idleTimeout: settings.idleTimeout,
            options: request.options, assetIdentifier: run.id)
        let challenges = ChallengeBudget(url: indexURL)
        let answer = challengeAnswer(run.id, challenges: challenges)
        let fetched = Mutex<(any PieceIndex)?>(nil)
        // The index is fetched bytes like the asset's: within the same limits.
        let bandwidth = TransferBandwidth(limiters: run.limiters)
        defer { bandwidth.end() }
        try await challenges.run {
            let index = try await ChunkedTransfer.fetchIndex(job, transport: transport, bandwidth: bandwidth, answer: answer)
            fetched.withLock { $0 = index }
        }
        guard let index = fetched.withLock({ $0 }) else { throw CancellationError() }
        if let sha256 = request.sha256, let described = index.wholeFileSHA256, sha256 != described.description {
            throw TransportError(.protocolError, "chunk index \(indexURL.redactedString) describes a file of SHA-256 \(described), "
                                 + "not the \(sha256) expected of \(request.url.redactedString)", url: indexURL, isRetryable: false)
        }
        let clock = ContinuousClock()
        let start = clock.now
        let plan = await durability.offload { [self] in
            index.plan(seed: seed, recorded: recorded) { digests in deliveredChunks(among: digests, for: run.id) }
        }
        // Benchmarks/delta/run.sh reads this line: what the plan cost (a zsync control file's rolling match reads the whole seed).
        let copied = plan.sources.count { $0 != .fetch }
        logger.info("asset \(run.id): planned in \(String(format: "%.1f", (clock.now - start).seconds * 1000)) ms from \(indexURL.redactedString): \(copied) of \(index.pieceCount) \(index.pieceName)s to copy")
        return ChunkedTransfer(plan: plan, indexURL: indexURL, durability: durability)
    }

    /// Where the chunk table says chunks with these SHA-256s are, in files delivered to the
    /// library's issue folders. A place the store gives is checked as any path from outside: an
    /// issue name and a path that would leave the issue folders are passed over. A failed read
    /// locates nothing (the chunks are fetched).
    private func deliveredChunks(among digests: [SHA256Value], for id: String) -> [SHA256Value: ChunkPlan.Location] {
        let found: [SHA256Value: DeliveredChunk]
        let clock = ContinuousClock()
        let start = clock.now
        do {
            found = try store.deliveredChunks(among: digests)
        } catch {
            logger.warning("asset \(id): \(error.message); its chunks are fetched")
            return [:]
        }
        let took = clock.now - start
        var files: [String: URL?] = [:]
        let located = found.compactMapValues { chunk in
            let key = chunk.issueName + "/" + chunk.path
            if files[key] == nil {
                let inside = IssueName.problem(with: chunk.issueName) == nil && RelativePath.problem(with: chunk.path) == nil
                files[key] = .some(inside ? layout.deliveredURL(issue: chunk.issueName, path: chunk.path) : nil)
            }
            return (files[key] ?? nil).map { ChunkPlan.Location(file: $0, offset: chunk.offset) }
        }
        // Benchmarks/delta/lookup.sh reads this line.
        logger.info("asset \(id): \(digests.count) chunks looked up in the chunk table in \(String(format: "%.2f", took.seconds * 1000)) ms: \(located.count) found in \(files.count) delivered files")
        return located
    }

    /// Whether an app delegate is attached to the asset now (those of a cancelled download that
    /// may still finish included).
    private func hasDelegates(_ id: String) -> Bool {
        guard hubsCreated.load(ordering: .acquiring) else { return false }
        return state.withLock { state in
            guard let entry = state.entries[id] else { return false }
            return entry.hub?.hasDelegates == true || entry.cancelledHub?.hasDelegates == true
        }
    }

    func currentHub(_ id: String) -> AssetEventHub? {
        guard hubsCreated.load(ordering: .acquiring) else { return nil }
        return state.withLock { $0.entries[id]?.hub }
    }

    /// Records the request a delegate refreshed before a resume, in the row and in the live view
    /// (``AssetDownload/request`` reads the live view while the asset is in memory: it showed
    /// the old URL until the entry left memory).
    private func updateRequest(_ id: String, _ request: AssetRequest) {
        guard (try? store.updateRequest(id: id, request)) != nil else { return }
        state.withLock { $0.entries[id]?.request = request }
    }

    static func libraryError(_ error: any Error) -> LibraryError {
        switch error {
        case let error as LibraryError: error
        case let error as TransportError where error.code == .insufficientStorage:
            // One code for a full disk, whoever saw it.
            LibraryError(.insufficientStorage, error.description, underlying: error)
        case let error as TransportError: LibraryError(error)
        default: LibraryError(.transport, String(describing: error), isRetryable: false, underlying: SendableError(error))
        }
    }
}
