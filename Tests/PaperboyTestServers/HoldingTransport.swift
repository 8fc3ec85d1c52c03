import Paperboy

/// A ``Transport`` that hands `base` a sink forwarding to the library's, which takes bytes until
/// `limit` of them went through, then pushes back (as the core's limiter does) until the test
/// calls ``release()``.
///
/// ``HoldingSink`` for a transfer whose sink the library owns: the library runs the transfer, the
/// test waits until it ``isHolding`` (at least `limit` and fewer than all bytes in the library's
/// sink), acts there (closes the library), and the transfer cannot finish first whatever the
/// machine's pace. The limit counts every transfer through this transport, segments included.
public final class HoldingTransport: Transport, Sendable {
    private let base: any Transport
    private let hold: Hold

    /// `base`, held once `limit` bytes went through it.
    public init(base: any Transport, holdingAfter limit: Int) {
        self.base = base
        hold = Hold(after: limit)
    }

    public var schemes: Set<String> { base.schemes }
    public var capabilities: TransportCapabilities { base.capabilities }

    /// The bytes the library's sinks took so far.
    public var bytesTaken: Int { hold.taken }
    /// Whether a write was refused and ``release()`` has not been called yet.
    public var isHolding: Bool { hold.isHolding }

    /// Takes writes again and lets a paused transfer go on.
    public func release() { hold.release() }

    public func transfer(_ job: TransferJob, into sink: any TransferSink) async throws {
        try await base.transfer(job, into: HeldSink(sink, hold: hold))
    }
}

/// The library's sink behind a ``Hold``; everything else is forwarded as it is.
private final class HeldSink: TransferSink {
    private let sink: any TransferSink
    private let hold: Hold
    private let writer: HeldWriter

    init(_ sink: any TransferSink, hold: Hold) {
        self.sink = sink
        self.hold = hold
        writer = HeldWriter(hold)
    }

    func begin(_ response: TransferResponse) throws { try sink.begin(response) }
    func write(_ bytes: UnsafeRawBufferPointer) async throws { try await writer.write(bytes, to: sink.write) }
    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool { try writer.tryWrite(bytes, to: sink.tryWrite) }
    func whenWritable(_ callback: @escaping @Sendable () -> Void) { writer.whenWritable(callback, else: sink.whenWritable) }
    func challenge(_ challenge: AuthChallenge) async -> AuthChallengeDisposition { await sink.challenge(challenge) }

    func segment(_ range: Range<Int64>) throws -> (any TransferSegment)? {
        try sink.segment(range).map { HeldSegment($0, hold: hold) }
    }
}

/// One of the library's segments behind the same ``Hold``.
private final class HeldSegment: TransferSegment {
    private let segment: any TransferSegment
    private let writer: HeldWriter

    init(_ segment: any TransferSegment, hold: Hold) {
        self.segment = segment
        writer = HeldWriter(hold)
    }

    var range: Range<Int64> { segment.range }
    func write(_ bytes: UnsafeRawBufferPointer) async throws { try await writer.write(bytes, to: segment.write) }
    func tryWrite(_ bytes: UnsafeRawBufferPointer) throws -> Bool { try writer.tryWrite(bytes, to: segment.tryWrite) }
    func whenWritable(_ callback: @escaping @Sendable () -> Void) { writer.whenWritable(callback, else: segment.whenWritable) }
}
