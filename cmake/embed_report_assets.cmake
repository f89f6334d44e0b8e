# Turns the HTML report's script and style (tools/report/assets/) into C
# strings: cmake -DJS=report.js -DCSS=report.css -DOUT=report_assets.c -P this.
# Bytes, not text, so that no character of the sources needs C escaping; a
# "</script" or "</style" in them would end their element early: refused.
function(embed var path out)
  file(READ "${path}" text)
  string(TOLOWER "${text}" lower)
  string(FIND "${lower}" "</script" s)
  string(FIND "${lower}" "</style" t)
  if(NOT s EQUAL -1 OR NOT t EQUAL -1)
    message(FATAL_ERROR "${path}: contains </script or </style")
  endif()
  file(READ "${path}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n"
    hex "${hex}")
  set(${out} "${${out}}const char ${var}[] = {\n${hex}0x00};\n" PARENT_SCOPE)
endfunction()
set(c "/* Generated from tools/report/assets/ by cmake/embed_report_assets.cmake: do not edit. */\n")
embed(lens_report_asset_js "${JS}" c)
embed(lens_report_asset_css "${CSS}" c)
file(WRITE "${OUT}.tmp" "${c}")
file(RENAME "${OUT}.tmp" "${OUT}")
