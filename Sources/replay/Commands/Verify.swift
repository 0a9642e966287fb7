import ArgumentParser
import EventStoreLMDB
import Foundation
import ReadingEvents

extension Replay {
    /// `replay verify`: every check of the log and the views, writing nothing.
    struct Verify: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check every record's checksum, the hash chain, gapless positions, that every event decodes, and that the views equal a fresh rebuild.",
            discussion: """
                Prints each fault with its position; exits 1 on any fault. Writes nothing: the store is opened \
                read-only, so views that lag the log (left by a crash or by an append that did not fold) are \
                compared with a fresh fold up to their checkpoint, and the lag is reported as a fault.
                """)

        @OptionGroup var options: StoreOptions
        @Flag(help: "Print the report as JSON.") var json = false
        @OptionGroup var worker: WorkerOption

        /// One fault found.
        struct Fault: Encodable {
            let position: UInt64
            /// The check that found it (`checksum`, `undecodable`, `replication`, `views`, …).
            let kind: String
            let detail: String
        }

        /// The `--json` output.
        struct Output: Encodable {
            let records: UInt64
            let lastPosition: UInt64
            let decoded: Int
            let unknownTypes: [String: Int]
            let viewDigest: String
            let freshDigest: String
            let faults: [Fault]
            let viewCheckpoint: UInt64
            let viewLag: UInt64
            let quarantined: Int
            let ok: Bool
        }

        func run() throws {
            guard try worker.isWorker(store: options.url) else { return }
            // Every page's structure first (the free-page list and views included, which the
            // checks below never read): a damaged page is one error naming it.
            let store = try options.openExisting(readOnly: true, checkPages: true)
            let chain = try store.verifyLog()
            var faults = chain.faults.map { Fault(position: $0.position, kind: "\($0.kind)", detail: $0.detail) }
            var decoded = 0, unknown = 0
            var unknownTypes: [String: Int] = [:]
            if chain.isIntact {
                try store.forEachRecord(from: 1) { record in
                    do {
                        let envelope = try ReadingStore.envelope(of: record)
                        decoded += 1
                        if case .unknown(let u) = envelope.event { unknown += 1; unknownTypes[u.type, default: 0] += 1 }
                    } catch {
                        faults.append(Fault(position: record.position, kind: "undecodable", detail: "\(error)"))
                    }
                    return true
                }
            }
            if chain.isIntact {
                for fault in try store.verifyReplication() {
                    faults.append(Fault(position: fault.position, kind: "replication", detail: fault.detail + " (sync may skip or resend events)"))
                }
            }
            let quarantined = try store.quarantine().count
            var stored = "", fresh = ""
            let checkpoint = try store.viewCheckpoint()
            let lag = chain.lastPosition > checkpoint ? chain.lastPosition - checkpoint : 0
            if faults.isEmpty, lag > 0 {
                // Appends fold in their own transaction, so views never lag after a crash: views
                // behind the log were emptied, or written by something that did not fold.
                faults.append(Fault(position: checkpoint + 1, kind: "views",
                                    detail: "the views fold the log only up to position \(checkpoint) of \(chain.lastPosition) (\(lag) event(s) behind); run `replay rebuild`"))
            }
            if chain.isIntact, faults.allSatisfy({ $0.kind == "views" }) {
                stored = try store.viewDigest()
                fresh = try store.freshFoldDigest(through: checkpoint)
                if stored != fresh {
                    faults.append(Fault(position: checkpoint, kind: "views",
                                        detail: "stored views (digest \(stored)) differ from a fresh fold of the log up to their checkpoint \(checkpoint) (digest \(fresh)); run `replay rebuild`"))
                }
            }
            if json {
                try printJSON(Output(records: chain.recordCount, lastPosition: chain.lastPosition, decoded: decoded,
                                     unknownTypes: unknownTypes, viewDigest: stored, freshDigest: fresh, faults: faults,
                                     viewCheckpoint: checkpoint, viewLag: lag, quarantined: quarantined, ok: faults.isEmpty))
            } else {
                for fault in faults { print("fault at position \(fault.position): \(fault.kind): \(fault.detail)") }
                print("\(chain.recordCount) records, last position \(chain.lastPosition), \(decoded) decoded, \(unknown) of unknown types\(unknownTypes.isEmpty ? "" : " \(unknownTypes)")")
                if faults.isEmpty { print("views digest \(stored) = fresh rebuild") }
                if quarantined > 0 { print("\(quarantined) event(s) of other replicas in the quarantine (`replay sync quarantine` lists them)") }
            }
            if let first = faults.map(\.position).min() {
                throw ReplayError("verify found \(faults.count) fault(s); the first at position \(first)")
            }
        }
    }
}
