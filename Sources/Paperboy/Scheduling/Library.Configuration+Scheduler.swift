/// The few values the scheduler derives from its ``Library/Configuration``, in one place; every
/// other setting it reads as is.
extension Library.Configuration {
    /// ``maxConcurrentTransfers``, at least 1.
    var maxConcurrent: Int { max(1, maxConcurrentTransfers) }
    /// ``maxTransfersPerHost``, at least 1.
    var maxPerHost: Int { max(1, maxTransfersPerHost) }
    /// ``networkPolicy``, else the mode's default: ``NetworkPolicy/unmeteredOnly`` in the
    /// background, ``NetworkPolicy/any`` in the foreground.
    var effectiveNetworkPolicy: NetworkPolicy { networkPolicy ?? (mode == .background ? .unmeteredOnly : .any) }
    /// ``maxUnpackedBytes`` and ``maxUnpackRatio``, as the unpacker takes them.
    var unpackLimits: Unpacker.Limits { Unpacker.Limits(maxBytes: maxUnpackedBytes, maxRatio: maxUnpackRatio) }
}
