import ArgumentParser
import EventStoreLMDB
import Foundation

extension Replay {
    /// `replay backup DEST`: a compact, consistent copy of the store.
    struct Backup: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a compact copy of the store to DEST, also while another process appends.",
            discussion: """
                DEST must not exist or be an empty directory. The copy is a consistent snapshot (mdb_env_copy2 with \
                MDB_CP_COMPACT), written to a hidden temporary directory beside DEST (0700, data.mdb 0600) and renamed \
                to DEST only when complete: a failed or killed backup leaves nothing at DEST.
                """)

        @OptionGroup var options: StoreOptions
        @Argument(help: "The directory to write the copy to.") var destination: String

        func run() throws {
            let store = try options.openExisting(readOnly: true)
            let url = URL(fileURLWithPath: destination)
            let size = try store.backup(to: url)
            print("backed up \(try store.lastPosition()) events to \(url.path) (\(size) bytes)")
        }
    }
}
