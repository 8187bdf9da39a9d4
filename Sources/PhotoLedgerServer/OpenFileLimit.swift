import Foundation

/// The process's limit of open file descriptors (`RLIMIT_NOFILE`), which bounds how many
/// connections the server can hold: each one is a socket.
enum OpenFileLimit {
    /// The soft and hard limits, as `getrlimit` reports them.
    struct Limits: Equatable {
        var soft: UInt64
        var hard: UInt64
    }

    /// The limits now.
    static func current() -> Limits {
        var limits = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits) == 0 else { return Limits(soft: 0, hard: 0) }
        return Limits(soft: UInt64(limits.rlim_cur), hard: UInt64(limits.rlim_max))
    }

    /// Raises the soft limit to `wanted`, or to the hard limit when that is lower; never lowers it.
    /// Returns the limits before and after.
    static func raise(to wanted: UInt64) -> (before: Limits, after: Limits) {
        let before = current()
        let target = min(wanted, before.hard)
        guard target > before.soft else { return (before, before) }
        var limits = rlimit(rlim_cur: rlim_t(target), rlim_max: rlim_t(before.hard))
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limits)
        return (before, current())
    }
}
