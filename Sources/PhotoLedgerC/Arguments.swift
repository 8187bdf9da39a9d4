import CPhotoLedger
import Glibc

// Reading the arguments of a C call and handing back its results: the conventions photoledger.h
// describes (UTF-8 text, out strings the caller frees, a message on failure).

/// A `char **` out argument.
public typealias OutString = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>

/// A `const char *const *` argument with a count.
public typealias TextArray = UnsafePointer<UnsafePointer<CChar>?>

/// Runs the body of a call: clears `message` and the out strings, and on failure writes the
/// error's message and returns its status.
func perform(message: OutString?, clearing outputs: [OutString?] = [], _ body: () throws -> Void) -> photoledger_status {
    message?.pointee = nil
    for output in outputs { output?.pointee = nil }
    do {
        try body()
        return photoledger_status(PHOTOLEDGER_OK)
    } catch {
        let failure = InterfaceError(error)
        message?.pointee = strdup(failure.message)
        return failure.status
    }
}

/// Hands a string to the caller, who frees it with photoledger_string_free.
func give(_ value: String, to output: OutString?) {
    output?.pointee = strdup(value)
}

/// A required text argument.
func text(_ pointer: UnsafePointer<CChar>?, _ name: String) throws -> String {
    guard let pointer else { throw InterfaceError.invalidArgument("\(name) is NULL; pass a UTF-8 string") }
    guard let value = String(validatingCString: pointer) else {
        throw InterfaceError.invalidArgument("\(name) is not UTF-8 text; pass it encoded as UTF-8")
    }
    return value
}

/// An optional text argument (NULL: nil).
func optionalText(_ pointer: UnsafePointer<CChar>?, _ name: String) throws -> String? {
    try pointer.map { try text($0, name) }
}

/// `count` identifiers from a `const char *const *` array.
func identifiers(_ array: TextArray?, count: Int, _ name: String) throws -> [String] {
    guard count > 0 else { return [] }
    guard let array else { throw InterfaceError.invalidArgument("\(name) is NULL but its count is \(count); pass an array of identifiers") }
    return try (0..<count).map { try text(array[$0], "\(name)[\($0)]") }
}

/// The library behind a handle.
func library(_ handle: OpaquePointer?) throws -> LibraryHandle {
    guard let handle else { throw InterfaceError.invalidArgument("the library is NULL; open one with photoledger_open") }
    return LibraryHandle.from(handle)
}

/// Checks that `flags` has no bit but those of `known`.
func checkFlags(_ flags: UInt32, known: UInt32, _ name: String) throws {
    guard flags & ~known == 0 else {
        throw InterfaceError.invalidArgument("\(name) has unknown bits (\(flags & ~known)); use only the flags photoledger.h defines")
    }
}
