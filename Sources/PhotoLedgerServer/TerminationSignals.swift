import Foundation

/// Waits for SIGTERM or SIGINT without a signal handler: the signals are blocked in every
/// thread and taken synchronously with `sigwait`, so shutdown code runs as ordinary code on an
/// ordinary thread (nothing async-signal-unsafe happens inside a handler).
public enum TerminationSignals {
    /// Blocks SIGTERM and SIGINT in the calling thread and every thread it starts afterwards,
    /// and ignores SIGPIPE. Call it first thing in `main`, before starting the server.
    public static func block() {
        signal(SIGPIPE, SIG_IGN)
        var set = terminationSet()
        pthread_sigmask(SIG_BLOCK, &set, nil)
    }

    /// Waits until SIGTERM or SIGINT arrives and returns its number.
    public static func wait() -> Int32 {
        var set = terminationSet()
        var received: Int32 = 0
        while sigwait(&set, &received) != 0 {}
        return received
    }

    private static func terminationSet() -> sigset_t {
        var set = sigset_t()
        sigemptyset(&set)
        sigaddset(&set, SIGTERM)
        sigaddset(&set, SIGINT)
        return set
    }
}
