import CPhotoLedger
import PhotoLedger

// The functions of photoledger.h that open, close and authorize a library. Each is documented in
// the header; the Swift names are not part of the interface.

/// `photoledger_open`: opens or creates a library and hands out a handle.
@_cdecl("photoledger_open")
public func openLibrary(
    _ path: UnsafePointer<CChar>?, _ options: UnsafePointer<photoledger_open_options>?, _ handle: UnsafeMutablePointer<OpaquePointer?>?,
    _ message: OutString?
) -> photoledger_status {
    handle?.pointee = nil
    return perform(message: message) {
        let path = try text(path, "path")
        guard let handle else {
            throw InterfaceError.invalidArgument("the library out pointer is NULL; pass the address of a photoledger_library *")
        }
        var device: String?
        var preauthorized = false
        if let options = options?.pointee {
            guard options.size >= MemoryLayout<photoledger_open_options>.size else {
                throw InterfaceError.invalidArgument(
                    "photoledger_open_options.size is \(options.size); initialize the options with PHOTOLEDGER_OPEN_OPTIONS_INIT")
            }
            device = try optionalText(options.device, "photoledger_open_options.device")
            preauthorized = options.preauthorized != 0
        }
        handle.pointee = try LibraryHandle.open(path: path, device: device, preauthorized: preauthorized).retainedHandle()
    }
}

/// `photoledger_close`: waits for the queued work and releases the handle.
@_cdecl("photoledger_close")
public func closeLibrary(_ handle: OpaquePointer?) {
    guard let handle else { return }
    LibraryHandle.close(handle)
}

/// `photoledger_authorization_status`: the status for an access level, or -1.
@_cdecl("photoledger_authorization_status")
public func authorizationStatus(_ handle: OpaquePointer?, _ level: Int32) -> Int32 {
    guard let handle, let level = AccessLevel(rawValue: Int(level)) else { return -1 }
    return Int32(LibraryHandle.from(handle).library.authorizationStatus(for: level).rawValue)
}

/// `photoledger_set_authorization_status`: records the user's answer for an access level.
@_cdecl("photoledger_set_authorization_status")
public func setAuthorizationStatus(_ handle: OpaquePointer?, _ level: Int32, _ status: Int32, _ message: OutString?) -> photoledger_status {
    perform(message: message) {
        let library = try library(handle).library
        guard let level = AccessLevel(rawValue: Int(level)) else {
            throw InterfaceError.invalidArgument(
                "access level \(level) is unknown; pass PHOTOLEDGER_ACCESS_ADD_ONLY or PHOTOLEDGER_ACCESS_READ_WRITE")
        }
        guard let status = AuthorizationStatus(rawValue: Int(status)) else {
            throw InterfaceError.invalidArgument("authorization status \(status) is unknown; pass one of PHOTOLEDGER_AUTHORIZATION_*")
        }
        try library.setAuthorizationStatus(status, for: level)
    }
}
