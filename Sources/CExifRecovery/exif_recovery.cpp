#include "CExifRecovery.h"

#include <cstdlib>
#include <cstring>
#include <exiv2/exiv2.hpp>
#include <mutex>
#include <string>

int photoledger_exif_recover(const unsigned char *tiff, size_t length, unsigned char **result, size_t *result_length) {
    *result = nullptr;
    *result_length = 0;
    try {
        Exiv2::LogMsg::setLevel(Exiv2::LogMsg::mute);
        Exiv2::ExifData exif;
        Exiv2::ByteOrder order = Exiv2::ExifParser::decode(exif, tiff, static_cast<uint32_t>(length));
        if (exif.empty()) return -1;
        // Keep the main IFD, the Exif and GPS IFDs and interoperability; maker notes and the
        // thumbnail are what make a block large, and nothing here reads them.
        Exiv2::ExifData kept;
        for (const auto &entry : exif) {
            const std::string group = entry.groupName();
            if ((group == "Image" || group == "Photo" || group == "GPSInfo" || group == "Iop") && entry.key() != "Exif.Photo.MakerNote") {
                kept.add(entry);
            }
        }
        if (kept.empty()) return -1;
        Exiv2::Blob blob;
        Exiv2::ExifParser::encode(blob, order == Exiv2::invalidByteOrder ? Exiv2::littleEndian : order, kept);
        if (blob.empty()) return -1;
        unsigned char *bytes = static_cast<unsigned char *>(std::malloc(blob.size()));
        if (bytes == nullptr) return -1;
        std::memcpy(bytes, blob.data(), blob.size());
        *result = bytes;
        *result_length = blob.size();
        return 0;
    } catch (...) {
        return -1;
    }
}

void photoledger_exif_recovered_free(unsigned char *bytes) { std::free(bytes); }

namespace {
std::mutex xmpToolkitLock;

void lockXmpToolkit(void *, bool lock) {
    if (lock) {
        xmpToolkitLock.lock();
    } else {
        xmpToolkitLock.unlock();
    }
}

std::once_flag xmpInitialized;
}  // namespace

int photoledger_xmp_properties(const char *packet, size_t length, char **result) {
    *result = nullptr;
    try {
        // The XMP toolkit is shared by every thread: initialized once, with a lock it takes.
        std::call_once(xmpInitialized, [] {
            Exiv2::LogMsg::setLevel(Exiv2::LogMsg::mute);
            Exiv2::XmpParser::initialize(lockXmpToolkit, nullptr);
        });
        Exiv2::XmpData xmp;
        if (Exiv2::XmpParser::decode(xmp, std::string(packet, length)) != 0) return -1;
        std::string text;
        for (const auto &property : xmp) {
            std::string value;
            if (property.typeId() == Exiv2::langAlt) {
                value = dynamic_cast<const Exiv2::LangAltValue &>(property.value()).toString("x-default");
            } else {
                value = property.toString();
            }
            for (char &character : value) {
                if (character == '\t' || character == '\n' || character == '\r') character = ' ';
            }
            text += property.key() + "\t" + value + "\n";
        }
        char *bytes = static_cast<char *>(std::malloc(text.size() + 1));
        if (bytes == nullptr) return -1;
        std::memcpy(bytes, text.c_str(), text.size() + 1);
        *result = bytes;
        return 0;
    } catch (...) {
        return -1;
    }
}

void photoledger_xmp_properties_free(char *text) { std::free(text); }
