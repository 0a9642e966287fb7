import Foundation

extension LMDBEnvironment {
    /// On iOS, gives the store's directory, `data.mdb` and `lock.mdb` the data protection class
    /// `completeUntilFirstUserAuthentication`: encrypted until the device is first unlocked after
    /// a restart, then readable while it is locked, so a background sync or a widget can open the
    /// store with the screen locked (with `complete` it could not). Elsewhere nothing is done.
    /// Called after a writable open.
    ///
    /// - Throws: ``LMDBError`` (``LMDBError/Kind/system``) naming the file when iOS refuses.
    static func applyFileProtection(directory: String) throws(LMDBError) {
        #if os(iOS)
        // Not compiled by this project's CI (no Apple toolchain): Foundation's documented API only.
        for path in [directory, directory + "/data.mdb", directory + "/lock.mdb"] where FileManager.default.fileExists(atPath: path) {
            do {
                try FileManager.default.setAttributes(
                    [.protectionKey: FileProtectionType.completeUntilFirstUserAuthentication], ofItemAtPath: path)
            } catch {
                throw LMDBError(operation: "setAttributes(\(path))", code: EACCES,
                                message: "cannot give \(path) the file protection completeUntilFirstUserAuthentication: \(error)")
            }
        }
        #endif
    }
}
