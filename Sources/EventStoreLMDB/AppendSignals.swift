import Foundation
import LMDB

/// Wakes the log's observers when this process appends (other processes are seen by polling).
final class AppendSignals: Sendable {
    private let wakeups = Locked<[UUID: Wakeup]>([:])

    /// Registers an observer's wakeup; returns its key for ``remove(_:)``.
    func add(_ wakeup: Wakeup) -> UUID {
        let key = UUID()
        wakeups.withLock { $0[key] = wakeup }
        return key
    }

    /// Unregisters an observer.
    func remove(_ key: UUID) {
        _ = wakeups.withLock { $0.removeValue(forKey: key) }
    }

    /// The number of registered observers.
    var count: Int { wakeups.withLock { $0.count } }

    /// Wakes every observer (called after an append commits).
    func signalAll() {
        for wakeup in wakeups.withLock({ Array($0.values) }) { wakeup.signal() }
    }
}

/// A one-waiter wakeup: ``wait(timeout:)`` returns on ``signal()``, on timeout or on cancellation.
final class Wakeup: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Locked(State())

    /// Wakes the waiter, or makes the next wait return at once.
    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            state.pending = true
            return nil
        }
        waiter?.resume()
    }

    /// Waits until signalled, `timeout` passes or the task is cancelled.
    func wait(timeout: Duration) async {
        let timer = Task { [weak self] in
            try? await Task.sleep(for: timeout)
            self?.signal()
        }
        defer { timer.cancel() }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            signal()
        }
    }
}
