# Generated from MBL.g4 by ANTLR 4.13.2 (scripts/gen-parser); do not edit.
# encoding: utf-8
from antlr4 import *
from io import StringIO
import sys
if sys.version_info[1] > 5:
	from typing import TextIO
else:
	from typing.io import TextIO

def serializedATN():
    return [
        4,1,84,480,2,0,7,0,2,1,7,1,2,2,7,2,2,3,7,3,2,4,7,4,2,5,7,5,2,6,7,
        6,2,7,7,7,2,8,7,8,2,9,7,9,2,10,7,10,2,11,7,11,2,12,7,12,2,13,7,13,
        2,14,7,14,2,15,7,15,2,16,7,16,2,17,7,17,2,18,7,18,2,19,7,19,2,20,
        7,20,2,21,7,21,2,22,7,22,2,23,7,23,2,24,7,24,1,0,5,0,52,8,0,10,0,
        12,0,55,9,0,1,0,1,0,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,3,1,68,8,
        1,1,2,1,2,1,2,1,2,1,3,1,3,1,3,1,3,1,3,1,3,1,3,1,3,1,4,1,4,1,4,1,
        4,1,4,1,4,1,4,1,4,5,4,90,8,4,10,4,12,4,93,9,4,1,4,3,4,96,8,4,1,4,
        1,4,1,5,1,5,1,5,1,5,1,6,1,6,1,6,1,6,5,6,108,8,6,10,6,12,6,111,9,
        6,1,6,1,6,1,7,1,7,1,7,1,7,5,7,119,8,7,10,7,12,7,122,9,7,1,7,1,7,
        1,8,1,8,1,8,1,8,1,8,1,9,1,9,1,9,1,9,1,9,1,9,1,9,1,9,1,9,1,9,1,9,
        1,9,1,9,3,9,144,8,9,1,9,1,9,1,9,1,9,1,9,1,9,1,9,1,9,1,9,1,9,3,9,
        156,8,9,1,9,1,9,1,9,1,9,1,9,1,9,1,9,1,9,3,9,166,8,9,1,9,1,9,1,9,
        1,9,1,9,1,9,1,9,1,9,1,9,1,9,3,9,178,8,9,1,9,1,9,3,9,182,8,9,1,10,
        1,10,1,10,1,11,1,11,1,11,1,11,3,11,191,8,11,1,11,1,11,1,11,3,11,
        196,8,11,1,11,1,11,1,12,1,12,1,12,1,12,1,13,1,13,1,13,5,13,207,8,
        13,10,13,12,13,210,9,13,1,14,1,14,1,14,1,14,1,15,1,15,1,15,1,15,
        5,15,220,8,15,10,15,12,15,223,9,15,1,15,1,15,1,16,1,16,1,16,1,16,
        3,16,231,8,16,1,16,1,16,1,16,1,16,1,16,1,16,1,16,1,16,1,16,1,16,
        1,16,5,16,244,8,16,10,16,12,16,247,9,16,1,16,3,16,250,8,16,1,16,
        1,16,1,16,1,16,1,16,4,16,257,8,16,11,16,12,16,258,1,16,1,16,3,16,
        263,8,16,1,17,1,17,1,17,3,17,268,8,17,1,18,1,18,5,18,272,8,18,10,
        18,12,18,275,9,18,1,18,1,18,1,19,1,19,1,19,1,19,3,19,283,8,19,1,
        19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,3,19,294,8,19,1,19,1,
        19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,
        19,3,19,311,8,19,3,19,313,8,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,
        1,19,1,19,1,19,3,19,325,8,19,1,19,1,19,1,19,1,19,1,19,1,19,3,19,
        333,8,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,
        1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,3,19,355,8,19,1,19,
        1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,1,19,
        3,19,371,8,19,1,20,1,20,1,20,1,20,3,20,377,8,20,1,20,1,20,1,20,1,
        20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,
        20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,
        20,1,20,1,20,3,20,411,8,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,
        20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,1,20,5,
        20,433,8,20,10,20,12,20,436,9,20,1,21,1,21,1,21,1,21,1,21,1,21,1,
        21,1,21,1,21,1,21,1,21,1,21,1,21,3,21,451,8,21,1,21,1,21,1,21,1,
        21,1,21,1,21,1,21,3,21,460,8,21,1,22,1,22,1,22,5,22,465,8,22,10,
        22,12,22,468,9,22,1,23,1,23,1,23,1,23,1,23,1,23,3,23,476,8,23,1,
        24,1,24,1,24,0,1,40,25,0,2,4,6,8,10,12,14,16,18,20,22,24,26,28,30,
        32,34,36,38,40,42,44,46,48,0,11,1,0,13,14,1,0,24,26,2,0,36,36,38,
        38,2,0,5,5,39,43,1,0,52,53,1,0,54,56,2,0,54,54,59,59,1,0,60,61,1,
        0,65,70,1,0,73,74,7,0,12,14,20,22,24,26,30,30,32,34,52,53,79,79,
        530,0,53,1,0,0,0,2,67,1,0,0,0,4,69,1,0,0,0,6,73,1,0,0,0,8,81,1,0,
        0,0,10,99,1,0,0,0,12,103,1,0,0,0,14,114,1,0,0,0,16,125,1,0,0,0,18,
        181,1,0,0,0,20,183,1,0,0,0,22,186,1,0,0,0,24,199,1,0,0,0,26,203,
        1,0,0,0,28,211,1,0,0,0,30,215,1,0,0,0,32,262,1,0,0,0,34,264,1,0,
        0,0,36,269,1,0,0,0,38,370,1,0,0,0,40,376,1,0,0,0,42,459,1,0,0,0,
        44,461,1,0,0,0,46,475,1,0,0,0,48,477,1,0,0,0,50,52,3,2,1,0,51,50,
        1,0,0,0,52,55,1,0,0,0,53,51,1,0,0,0,53,54,1,0,0,0,54,56,1,0,0,0,
        55,53,1,0,0,0,56,57,5,0,0,1,57,1,1,0,0,0,58,68,3,4,2,0,59,68,3,6,
        3,0,60,68,3,8,4,0,61,68,3,12,6,0,62,68,3,14,7,0,63,68,3,18,9,0,64,
        68,3,22,11,0,65,68,3,24,12,0,66,68,3,30,15,0,67,58,1,0,0,0,67,59,
        1,0,0,0,67,60,1,0,0,0,67,61,1,0,0,0,67,62,1,0,0,0,67,63,1,0,0,0,
        67,64,1,0,0,0,67,65,1,0,0,0,67,66,1,0,0,0,68,3,1,0,0,0,69,70,5,1,
        0,0,70,71,5,80,0,0,71,72,5,2,0,0,72,5,1,0,0,0,73,74,5,3,0,0,74,75,
        3,48,24,0,75,76,5,4,0,0,76,77,3,46,23,0,77,78,5,5,0,0,78,79,3,40,
        20,0,79,80,5,2,0,0,80,7,1,0,0,0,81,82,5,6,0,0,82,83,3,48,24,0,83,
        84,5,4,0,0,84,85,3,46,23,0,85,86,5,7,0,0,86,91,3,10,5,0,87,88,5,
        8,0,0,88,90,3,10,5,0,89,87,1,0,0,0,90,93,1,0,0,0,91,89,1,0,0,0,91,
        92,1,0,0,0,92,95,1,0,0,0,93,91,1,0,0,0,94,96,5,8,0,0,95,94,1,0,0,
        0,95,96,1,0,0,0,96,97,1,0,0,0,97,98,5,9,0,0,98,9,1,0,0,0,99,100,
        3,48,24,0,100,101,5,5,0,0,101,102,3,40,20,0,102,11,1,0,0,0,103,104,
        5,10,0,0,104,105,3,48,24,0,105,109,5,7,0,0,106,108,3,16,8,0,107,
        106,1,0,0,0,108,111,1,0,0,0,109,107,1,0,0,0,109,110,1,0,0,0,110,
        112,1,0,0,0,111,109,1,0,0,0,112,113,5,9,0,0,113,13,1,0,0,0,114,115,
        5,11,0,0,115,116,3,48,24,0,116,120,5,7,0,0,117,119,3,16,8,0,118,
        117,1,0,0,0,119,122,1,0,0,0,120,118,1,0,0,0,120,121,1,0,0,0,121,
        123,1,0,0,0,122,120,1,0,0,0,123,124,5,9,0,0,124,15,1,0,0,0,125,126,
        3,48,24,0,126,127,5,4,0,0,127,128,3,46,23,0,128,129,5,2,0,0,129,
        17,1,0,0,0,130,131,5,12,0,0,131,132,3,48,24,0,132,133,5,4,0,0,133,
        134,7,0,0,0,134,135,5,15,0,0,135,136,3,46,23,0,136,137,5,16,0,0,
        137,138,5,17,0,0,138,139,3,46,23,0,139,140,5,18,0,0,140,141,3,40,
        20,0,141,143,5,19,0,0,142,144,3,20,10,0,143,142,1,0,0,0,143,144,
        1,0,0,0,144,145,1,0,0,0,145,146,5,2,0,0,146,182,1,0,0,0,147,148,
        5,20,0,0,148,149,3,48,24,0,149,150,5,4,0,0,150,151,3,46,23,0,151,
        152,5,18,0,0,152,153,3,40,20,0,153,155,5,19,0,0,154,156,3,20,10,
        0,155,154,1,0,0,0,155,156,1,0,0,0,156,157,1,0,0,0,157,158,5,2,0,
        0,158,182,1,0,0,0,159,160,5,21,0,0,160,161,3,48,24,0,161,162,5,18,
        0,0,162,163,3,40,20,0,163,165,5,19,0,0,164,166,3,20,10,0,165,164,
        1,0,0,0,165,166,1,0,0,0,166,167,1,0,0,0,167,168,5,2,0,0,168,182,
        1,0,0,0,169,170,5,22,0,0,170,171,3,48,24,0,171,172,5,4,0,0,172,173,
        3,46,23,0,173,174,5,18,0,0,174,175,3,40,20,0,175,177,5,19,0,0,176,
        178,3,20,10,0,177,176,1,0,0,0,177,178,1,0,0,0,178,179,1,0,0,0,179,
        180,5,2,0,0,180,182,1,0,0,0,181,130,1,0,0,0,181,147,1,0,0,0,181,
        159,1,0,0,0,181,169,1,0,0,0,182,19,1,0,0,0,183,184,5,23,0,0,184,
        185,7,1,0,0,185,21,1,0,0,0,186,187,5,27,0,0,187,188,3,48,24,0,188,
        190,5,15,0,0,189,191,3,26,13,0,190,189,1,0,0,0,190,191,1,0,0,0,191,
        192,1,0,0,0,192,195,5,16,0,0,193,194,5,17,0,0,194,196,3,46,23,0,
        195,193,1,0,0,0,195,196,1,0,0,0,196,197,1,0,0,0,197,198,3,36,18,
        0,198,23,1,0,0,0,199,200,5,28,0,0,200,201,3,48,24,0,201,202,3,36,
        18,0,202,25,1,0,0,0,203,208,3,28,14,0,204,205,5,8,0,0,205,207,3,
        28,14,0,206,204,1,0,0,0,207,210,1,0,0,0,208,206,1,0,0,0,208,209,
        1,0,0,0,209,27,1,0,0,0,210,208,1,0,0,0,211,212,3,48,24,0,212,213,
        5,4,0,0,213,214,3,46,23,0,214,29,1,0,0,0,215,216,5,29,0,0,216,217,
        3,48,24,0,217,221,5,7,0,0,218,220,3,32,16,0,219,218,1,0,0,0,220,
        223,1,0,0,0,221,219,1,0,0,0,221,222,1,0,0,0,222,224,1,0,0,0,223,
        221,1,0,0,0,224,225,5,9,0,0,225,31,1,0,0,0,226,227,5,30,0,0,227,
        230,5,77,0,0,228,229,5,31,0,0,229,231,5,77,0,0,230,228,1,0,0,0,230,
        231,1,0,0,0,231,232,1,0,0,0,232,263,5,2,0,0,233,234,5,32,0,0,234,
        235,3,48,24,0,235,236,5,5,0,0,236,249,3,48,24,0,237,238,5,33,0,0,
        238,239,5,34,0,0,239,240,5,15,0,0,240,245,5,77,0,0,241,242,5,8,0,
        0,242,244,5,77,0,0,243,241,1,0,0,0,244,247,1,0,0,0,245,243,1,0,0,
        0,245,246,1,0,0,0,246,248,1,0,0,0,247,245,1,0,0,0,248,250,5,16,0,
        0,249,237,1,0,0,0,249,250,1,0,0,0,250,251,1,0,0,0,251,252,5,2,0,
        0,252,263,1,0,0,0,253,256,3,34,17,0,254,255,5,17,0,0,255,257,3,34,
        17,0,256,254,1,0,0,0,257,258,1,0,0,0,258,256,1,0,0,0,258,259,1,0,
        0,0,259,260,1,0,0,0,260,261,5,2,0,0,261,263,1,0,0,0,262,226,1,0,
        0,0,262,233,1,0,0,0,262,253,1,0,0,0,263,33,1,0,0,0,264,267,3,48,
        24,0,265,266,5,35,0,0,266,268,3,48,24,0,267,265,1,0,0,0,267,268,
        1,0,0,0,268,35,1,0,0,0,269,273,5,7,0,0,270,272,3,38,19,0,271,270,
        1,0,0,0,272,275,1,0,0,0,273,271,1,0,0,0,273,274,1,0,0,0,274,276,
        1,0,0,0,275,273,1,0,0,0,276,277,5,9,0,0,277,37,1,0,0,0,278,279,5,
        36,0,0,279,282,3,48,24,0,280,281,5,4,0,0,281,283,3,46,23,0,282,280,
        1,0,0,0,282,283,1,0,0,0,283,284,1,0,0,0,284,285,5,5,0,0,285,286,
        3,40,20,0,286,287,5,37,0,0,287,288,3,38,19,0,288,371,1,0,0,0,289,
        290,7,2,0,0,290,293,3,48,24,0,291,292,5,4,0,0,292,294,3,46,23,0,
        293,291,1,0,0,0,293,294,1,0,0,0,294,295,1,0,0,0,295,296,5,5,0,0,
        296,297,3,40,20,0,297,298,5,2,0,0,298,371,1,0,0,0,299,300,3,40,20,
        0,300,301,7,3,0,0,301,302,3,40,20,0,302,303,5,2,0,0,303,371,1,0,
        0,0,304,305,5,44,0,0,305,306,3,40,20,0,306,312,3,36,18,0,307,310,
        5,37,0,0,308,311,3,38,19,0,309,311,3,36,18,0,310,308,1,0,0,0,310,
        309,1,0,0,0,311,313,1,0,0,0,312,307,1,0,0,0,312,313,1,0,0,0,313,
        371,1,0,0,0,314,315,5,45,0,0,315,316,3,48,24,0,316,317,5,23,0,0,
        317,318,3,40,20,0,318,319,5,31,0,0,319,320,3,40,20,0,320,321,3,36,
        18,0,321,371,1,0,0,0,322,324,5,46,0,0,323,325,3,40,20,0,324,323,
        1,0,0,0,324,325,1,0,0,0,325,326,1,0,0,0,326,371,5,2,0,0,327,328,
        5,47,0,0,328,329,5,15,0,0,329,332,3,40,20,0,330,331,5,8,0,0,331,
        333,3,40,20,0,332,330,1,0,0,0,332,333,1,0,0,0,333,334,1,0,0,0,334,
        335,5,16,0,0,335,336,5,2,0,0,336,371,1,0,0,0,337,338,5,48,0,0,338,
        339,5,15,0,0,339,340,3,48,24,0,340,341,5,16,0,0,341,342,5,2,0,0,
        342,371,1,0,0,0,343,344,5,49,0,0,344,345,5,15,0,0,345,346,3,40,20,
        0,346,347,5,16,0,0,347,348,5,2,0,0,348,371,1,0,0,0,349,354,5,50,
        0,0,350,351,5,15,0,0,351,352,3,48,24,0,352,353,5,16,0,0,353,355,
        1,0,0,0,354,350,1,0,0,0,354,355,1,0,0,0,355,356,1,0,0,0,356,371,
        5,2,0,0,357,358,5,51,0,0,358,359,5,35,0,0,359,360,7,4,0,0,360,361,
        5,15,0,0,361,362,3,40,20,0,362,363,5,16,0,0,363,364,5,37,0,0,364,
        365,3,38,19,0,365,371,1,0,0,0,366,371,3,36,18,0,367,368,3,40,20,
        0,368,369,5,2,0,0,369,371,1,0,0,0,370,278,1,0,0,0,370,289,1,0,0,
        0,370,299,1,0,0,0,370,304,1,0,0,0,370,314,1,0,0,0,370,322,1,0,0,
        0,370,327,1,0,0,0,370,337,1,0,0,0,370,343,1,0,0,0,370,349,1,0,0,
        0,370,357,1,0,0,0,370,366,1,0,0,0,370,367,1,0,0,0,371,39,1,0,0,0,
        372,373,6,20,-1,0,373,377,3,42,21,0,374,375,7,5,0,0,375,377,3,40,
        20,11,376,372,1,0,0,0,376,374,1,0,0,0,377,434,1,0,0,0,378,379,10,
        9,0,0,379,380,5,58,0,0,380,433,3,40,20,10,381,382,10,8,0,0,382,383,
        7,6,0,0,383,433,3,40,20,9,384,385,10,7,0,0,385,386,7,7,0,0,386,433,
        3,40,20,8,387,388,10,6,0,0,388,389,5,62,0,0,389,433,3,40,20,7,390,
        391,10,5,0,0,391,392,5,63,0,0,392,433,3,40,20,6,393,394,10,4,0,0,
        394,395,5,64,0,0,395,433,3,40,20,5,396,397,10,3,0,0,397,398,7,8,
        0,0,398,433,3,40,20,4,399,400,10,2,0,0,400,401,5,71,0,0,401,433,
        3,40,20,3,402,403,10,1,0,0,403,404,5,72,0,0,404,433,3,40,20,2,405,
        406,10,15,0,0,406,407,5,35,0,0,407,408,3,48,24,0,408,410,5,15,0,
        0,409,411,3,44,22,0,410,409,1,0,0,0,410,411,1,0,0,0,411,412,1,0,
        0,0,412,413,5,16,0,0,413,433,1,0,0,0,414,415,10,14,0,0,415,416,5,
        35,0,0,416,433,3,48,24,0,417,418,10,13,0,0,418,419,5,18,0,0,419,
        420,3,40,20,0,420,421,5,4,0,0,421,422,3,40,20,0,422,423,5,19,0,0,
        423,433,1,0,0,0,424,425,10,12,0,0,425,426,5,18,0,0,426,427,3,40,
        20,0,427,428,5,19,0,0,428,433,1,0,0,0,429,430,10,10,0,0,430,431,
        5,57,0,0,431,433,3,46,23,0,432,378,1,0,0,0,432,381,1,0,0,0,432,384,
        1,0,0,0,432,387,1,0,0,0,432,390,1,0,0,0,432,393,1,0,0,0,432,396,
        1,0,0,0,432,399,1,0,0,0,432,402,1,0,0,0,432,405,1,0,0,0,432,414,
        1,0,0,0,432,417,1,0,0,0,432,424,1,0,0,0,432,429,1,0,0,0,433,436,
        1,0,0,0,434,432,1,0,0,0,434,435,1,0,0,0,435,41,1,0,0,0,436,434,1,
        0,0,0,437,460,5,77,0,0,438,460,7,9,0,0,439,440,5,51,0,0,440,441,
        5,67,0,0,441,442,3,48,24,0,442,443,5,69,0,0,443,444,5,15,0,0,444,
        445,3,40,20,0,445,446,5,16,0,0,446,460,1,0,0,0,447,448,3,48,24,0,
        448,450,5,15,0,0,449,451,3,44,22,0,450,449,1,0,0,0,450,451,1,0,0,
        0,451,452,1,0,0,0,452,453,5,16,0,0,453,460,1,0,0,0,454,460,3,48,
        24,0,455,456,5,15,0,0,456,457,3,40,20,0,457,458,5,16,0,0,458,460,
        1,0,0,0,459,437,1,0,0,0,459,438,1,0,0,0,459,439,1,0,0,0,459,447,
        1,0,0,0,459,454,1,0,0,0,459,455,1,0,0,0,460,43,1,0,0,0,461,466,3,
        40,20,0,462,463,5,8,0,0,463,465,3,40,20,0,464,462,1,0,0,0,465,468,
        1,0,0,0,466,464,1,0,0,0,466,467,1,0,0,0,467,45,1,0,0,0,468,466,1,
        0,0,0,469,470,5,75,0,0,470,471,5,67,0,0,471,472,5,77,0,0,472,476,
        5,69,0,0,473,476,5,76,0,0,474,476,3,48,24,0,475,469,1,0,0,0,475,
        473,1,0,0,0,475,474,1,0,0,0,476,47,1,0,0,0,477,478,7,10,0,0,478,
        49,1,0,0,0,38,53,67,91,95,109,120,143,155,165,177,181,190,195,208,
        221,230,245,249,258,262,267,273,282,293,310,312,324,332,354,370,
        376,410,432,434,450,459,466,475
    ]

class MBLParser ( Parser ):

    grammarFileName = "MBL.g4"

    atn = ATNDeserializer().deserialize(serializedATN())

    decisionsToDFA = [ DFA(ds, i) for i, ds in enumerate(atn.decisionToState) ]

    sharedContextCache = PredictionContextCache()

    literalNames = [ "<INVALID>", "'import'", "';'", "'const'", "':'", "'='", 
                     "'enum'", "'{'", "','", "'}'", "'header'", "'struct'", 
                     "'table'", "'lpm'", "'hash'", "'('", "')'", "'->'", 
                     "'['", "']'", "'array'", "'counter'", "'register'", 
                     "'in'", "'sram'", "'scratch'", "'local'", "'fn'", "'block'", 
                     "'pipeline'", "'ports'", "'..'", "'stage'", "'on'", 
                     "'me'", "'.'", "'let'", "'else'", "'var'", "'+='", 
                     "'-='", "'&='", "'|='", "'^='", "'if'", "'for'", "'return'", 
                     "'forward'", "'drop'", "'exception'", "'next'", "'packet'", 
                     "'push'", "'pull'", "'-'", "'~'", "'!'", "'as'", "'*'", 
                     "'+'", "'<<'", "'>>'", "'&'", "'^'", "'|'", "'=='", 
                     "'!='", "'<'", "'<='", "'>'", "'>='", "'&&'", "'||'", 
                     "'true'", "'false'", "'bit'", "'bool'" ]

    symbolicNames = [ "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "<INVALID>", "<INVALID>", "<INVALID>", 
                      "<INVALID>", "INT", "NODIGITS", "ID", "STRING", "LINE_COMMENT", 
                      "BLOCK_COMMENT", "WS", "ERRCHAR" ]

    RULE_program = 0
    RULE_item = 1
    RULE_importDecl = 2
    RULE_constDecl = 3
    RULE_enumDecl = 4
    RULE_enumMember = 5
    RULE_headerDecl = 6
    RULE_structDecl = 7
    RULE_fieldDecl = 8
    RULE_memDecl = 9
    RULE_placement = 10
    RULE_fnDecl = 11
    RULE_blockDecl = 12
    RULE_params = 13
    RULE_param = 14
    RULE_pipelineDecl = 15
    RULE_pipeItem = 16
    RULE_pipeEnd = 17
    RULE_body = 18
    RULE_stmt = 19
    RULE_expr = 20
    RULE_primary = 21
    RULE_args = 22
    RULE_type = 23
    RULE_ident = 24

    ruleNames =  [ "program", "item", "importDecl", "constDecl", "enumDecl", 
                   "enumMember", "headerDecl", "structDecl", "fieldDecl", 
                   "memDecl", "placement", "fnDecl", "blockDecl", "params", 
                   "param", "pipelineDecl", "pipeItem", "pipeEnd", "body", 
                   "stmt", "expr", "primary", "args", "type", "ident" ]

    EOF = Token.EOF
    T__0=1
    T__1=2
    T__2=3
    T__3=4
    T__4=5
    T__5=6
    T__6=7
    T__7=8
    T__8=9
    T__9=10
    T__10=11
    T__11=12
    T__12=13
    T__13=14
    T__14=15
    T__15=16
    T__16=17
    T__17=18
    T__18=19
    T__19=20
    T__20=21
    T__21=22
    T__22=23
    T__23=24
    T__24=25
    T__25=26
    T__26=27
    T__27=28
    T__28=29
    T__29=30
    T__30=31
    T__31=32
    T__32=33
    T__33=34
    T__34=35
    T__35=36
    T__36=37
    T__37=38
    T__38=39
    T__39=40
    T__40=41
    T__41=42
    T__42=43
    T__43=44
    T__44=45
    T__45=46
    T__46=47
    T__47=48
    T__48=49
    T__49=50
    T__50=51
    T__51=52
    T__52=53
    T__53=54
    T__54=55
    T__55=56
    T__56=57
    T__57=58
    T__58=59
    T__59=60
    T__60=61
    T__61=62
    T__62=63
    T__63=64
    T__64=65
    T__65=66
    T__66=67
    T__67=68
    T__68=69
    T__69=70
    T__70=71
    T__71=72
    T__72=73
    T__73=74
    T__74=75
    T__75=76
    INT=77
    NODIGITS=78
    ID=79
    STRING=80
    LINE_COMMENT=81
    BLOCK_COMMENT=82
    WS=83
    ERRCHAR=84

    def __init__(self, input:TokenStream, output:TextIO = sys.stdout):
        super().__init__(input, output)
        self.checkVersion("4.13.2")
        self._interp = ParserATNSimulator(self, self.atn, self.decisionsToDFA, self.sharedContextCache)
        self._predicates = None




    class ProgramContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def EOF(self):
            return self.getToken(MBLParser.EOF, 0)

        def item(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.ItemContext)
            else:
                return self.getTypedRuleContext(MBLParser.ItemContext,i)


        def getRuleIndex(self):
            return MBLParser.RULE_program

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitProgram" ):
                return visitor.visitProgram(self)
            else:
                return visitor.visitChildren(self)




    def program(self):

        localctx = MBLParser.ProgramContext(self, self._ctx, self.state)
        self.enterRule(localctx, 0, self.RULE_program)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 53
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while (((_la) & ~0x3f) == 0 and ((1 << _la) & 946871370) != 0):
                self.state = 50
                self.item()
                self.state = 55
                self._errHandler.sync(self)
                _la = self._input.LA(1)

            self.state = 56
            self.match(MBLParser.EOF)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class ItemContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def importDecl(self):
            return self.getTypedRuleContext(MBLParser.ImportDeclContext,0)


        def constDecl(self):
            return self.getTypedRuleContext(MBLParser.ConstDeclContext,0)


        def enumDecl(self):
            return self.getTypedRuleContext(MBLParser.EnumDeclContext,0)


        def headerDecl(self):
            return self.getTypedRuleContext(MBLParser.HeaderDeclContext,0)


        def structDecl(self):
            return self.getTypedRuleContext(MBLParser.StructDeclContext,0)


        def memDecl(self):
            return self.getTypedRuleContext(MBLParser.MemDeclContext,0)


        def fnDecl(self):
            return self.getTypedRuleContext(MBLParser.FnDeclContext,0)


        def blockDecl(self):
            return self.getTypedRuleContext(MBLParser.BlockDeclContext,0)


        def pipelineDecl(self):
            return self.getTypedRuleContext(MBLParser.PipelineDeclContext,0)


        def getRuleIndex(self):
            return MBLParser.RULE_item

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitItem" ):
                return visitor.visitItem(self)
            else:
                return visitor.visitChildren(self)




    def item(self):

        localctx = MBLParser.ItemContext(self, self._ctx, self.state)
        self.enterRule(localctx, 2, self.RULE_item)
        try:
            self.state = 67
            self._errHandler.sync(self)
            token = self._input.LA(1)
            if token in [1]:
                self.enterOuterAlt(localctx, 1)
                self.state = 58
                self.importDecl()
                pass
            elif token in [3]:
                self.enterOuterAlt(localctx, 2)
                self.state = 59
                self.constDecl()
                pass
            elif token in [6]:
                self.enterOuterAlt(localctx, 3)
                self.state = 60
                self.enumDecl()
                pass
            elif token in [10]:
                self.enterOuterAlt(localctx, 4)
                self.state = 61
                self.headerDecl()
                pass
            elif token in [11]:
                self.enterOuterAlt(localctx, 5)
                self.state = 62
                self.structDecl()
                pass
            elif token in [12, 20, 21, 22]:
                self.enterOuterAlt(localctx, 6)
                self.state = 63
                self.memDecl()
                pass
            elif token in [27]:
                self.enterOuterAlt(localctx, 7)
                self.state = 64
                self.fnDecl()
                pass
            elif token in [28]:
                self.enterOuterAlt(localctx, 8)
                self.state = 65
                self.blockDecl()
                pass
            elif token in [29]:
                self.enterOuterAlt(localctx, 9)
                self.state = 66
                self.pipelineDecl()
                pass
            else:
                raise NoViableAltException(self)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class ImportDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def STRING(self):
            return self.getToken(MBLParser.STRING, 0)

        def getRuleIndex(self):
            return MBLParser.RULE_importDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitImportDecl" ):
                return visitor.visitImportDecl(self)
            else:
                return visitor.visitChildren(self)




    def importDecl(self):

        localctx = MBLParser.ImportDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 4, self.RULE_importDecl)
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 69
            self.match(MBLParser.T__0)
            self.state = 70
            self.match(MBLParser.STRING)
            self.state = 71
            self.match(MBLParser.T__1)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class ConstDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def type_(self):
            return self.getTypedRuleContext(MBLParser.TypeContext,0)


        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)


        def getRuleIndex(self):
            return MBLParser.RULE_constDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitConstDecl" ):
                return visitor.visitConstDecl(self)
            else:
                return visitor.visitChildren(self)




    def constDecl(self):

        localctx = MBLParser.ConstDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 6, self.RULE_constDecl)
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 73
            self.match(MBLParser.T__2)
            self.state = 74
            self.ident()
            self.state = 75
            self.match(MBLParser.T__3)
            self.state = 76
            self.type_()
            self.state = 77
            self.match(MBLParser.T__4)
            self.state = 78
            self.expr(0)
            self.state = 79
            self.match(MBLParser.T__1)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class EnumDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def type_(self):
            return self.getTypedRuleContext(MBLParser.TypeContext,0)


        def enumMember(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.EnumMemberContext)
            else:
                return self.getTypedRuleContext(MBLParser.EnumMemberContext,i)


        def getRuleIndex(self):
            return MBLParser.RULE_enumDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitEnumDecl" ):
                return visitor.visitEnumDecl(self)
            else:
                return visitor.visitChildren(self)




    def enumDecl(self):

        localctx = MBLParser.EnumDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 8, self.RULE_enumDecl)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 81
            self.match(MBLParser.T__5)
            self.state = 82
            self.ident()
            self.state = 83
            self.match(MBLParser.T__3)
            self.state = 84
            self.type_()
            self.state = 85
            self.match(MBLParser.T__6)
            self.state = 86
            self.enumMember()
            self.state = 91
            self._errHandler.sync(self)
            _alt = self._interp.adaptivePredict(self._input,2,self._ctx)
            while _alt!=2 and _alt!=ATN.INVALID_ALT_NUMBER:
                if _alt==1:
                    self.state = 87
                    self.match(MBLParser.T__7)
                    self.state = 88
                    self.enumMember() 
                self.state = 93
                self._errHandler.sync(self)
                _alt = self._interp.adaptivePredict(self._input,2,self._ctx)

            self.state = 95
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==8:
                self.state = 94
                self.match(MBLParser.T__7)


            self.state = 97
            self.match(MBLParser.T__8)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class EnumMemberContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)


        def getRuleIndex(self):
            return MBLParser.RULE_enumMember

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitEnumMember" ):
                return visitor.visitEnumMember(self)
            else:
                return visitor.visitChildren(self)




    def enumMember(self):

        localctx = MBLParser.EnumMemberContext(self, self._ctx, self.state)
        self.enterRule(localctx, 10, self.RULE_enumMember)
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 99
            self.ident()
            self.state = 100
            self.match(MBLParser.T__4)
            self.state = 101
            self.expr(0)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class HeaderDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def fieldDecl(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.FieldDeclContext)
            else:
                return self.getTypedRuleContext(MBLParser.FieldDeclContext,i)


        def getRuleIndex(self):
            return MBLParser.RULE_headerDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitHeaderDecl" ):
                return visitor.visitHeaderDecl(self)
            else:
                return visitor.visitChildren(self)




    def headerDecl(self):

        localctx = MBLParser.HeaderDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 12, self.RULE_headerDecl)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 103
            self.match(MBLParser.T__9)
            self.state = 104
            self.ident()
            self.state = 105
            self.match(MBLParser.T__6)
            self.state = 109
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while (((_la) & ~0x3f) == 0 and ((1 << _la) & 13510830145433600) != 0) or _la==79:
                self.state = 106
                self.fieldDecl()
                self.state = 111
                self._errHandler.sync(self)
                _la = self._input.LA(1)

            self.state = 112
            self.match(MBLParser.T__8)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class StructDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def fieldDecl(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.FieldDeclContext)
            else:
                return self.getTypedRuleContext(MBLParser.FieldDeclContext,i)


        def getRuleIndex(self):
            return MBLParser.RULE_structDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitStructDecl" ):
                return visitor.visitStructDecl(self)
            else:
                return visitor.visitChildren(self)




    def structDecl(self):

        localctx = MBLParser.StructDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 14, self.RULE_structDecl)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 114
            self.match(MBLParser.T__10)
            self.state = 115
            self.ident()
            self.state = 116
            self.match(MBLParser.T__6)
            self.state = 120
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while (((_la) & ~0x3f) == 0 and ((1 << _la) & 13510830145433600) != 0) or _la==79:
                self.state = 117
                self.fieldDecl()
                self.state = 122
                self._errHandler.sync(self)
                _la = self._input.LA(1)

            self.state = 123
            self.match(MBLParser.T__8)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class FieldDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def type_(self):
            return self.getTypedRuleContext(MBLParser.TypeContext,0)


        def getRuleIndex(self):
            return MBLParser.RULE_fieldDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitFieldDecl" ):
                return visitor.visitFieldDecl(self)
            else:
                return visitor.visitChildren(self)




    def fieldDecl(self):

        localctx = MBLParser.FieldDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 16, self.RULE_fieldDecl)
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 125
            self.ident()
            self.state = 126
            self.match(MBLParser.T__3)
            self.state = 127
            self.type_()
            self.state = 128
            self.match(MBLParser.T__1)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class MemDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser


        def getRuleIndex(self):
            return MBLParser.RULE_memDecl

     
        def copyFrom(self, ctx:ParserRuleContext):
            super().copyFrom(ctx)



    class CounterDeclContext(MemDeclContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.MemDeclContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)

        def placement(self):
            return self.getTypedRuleContext(MBLParser.PlacementContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitCounterDecl" ):
                return visitor.visitCounterDecl(self)
            else:
                return visitor.visitChildren(self)


    class RegisterDeclContext(MemDeclContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.MemDeclContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)

        def type_(self):
            return self.getTypedRuleContext(MBLParser.TypeContext,0)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)

        def placement(self):
            return self.getTypedRuleContext(MBLParser.PlacementContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitRegisterDecl" ):
                return visitor.visitRegisterDecl(self)
            else:
                return visitor.visitChildren(self)


    class ArrayDeclContext(MemDeclContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.MemDeclContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)

        def type_(self):
            return self.getTypedRuleContext(MBLParser.TypeContext,0)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)

        def placement(self):
            return self.getTypedRuleContext(MBLParser.PlacementContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitArrayDecl" ):
                return visitor.visitArrayDecl(self)
            else:
                return visitor.visitChildren(self)


    class TableDeclContext(MemDeclContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.MemDeclContext
            super().__init__(parser)
            self.tableKind = None # Token
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)

        def type_(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.TypeContext)
            else:
                return self.getTypedRuleContext(MBLParser.TypeContext,i)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)

        def placement(self):
            return self.getTypedRuleContext(MBLParser.PlacementContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitTableDecl" ):
                return visitor.visitTableDecl(self)
            else:
                return visitor.visitChildren(self)



    def memDecl(self):

        localctx = MBLParser.MemDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 18, self.RULE_memDecl)
        self._la = 0 # Token type
        try:
            self.state = 181
            self._errHandler.sync(self)
            token = self._input.LA(1)
            if token in [12]:
                localctx = MBLParser.TableDeclContext(self, localctx)
                self.enterOuterAlt(localctx, 1)
                self.state = 130
                self.match(MBLParser.T__11)
                self.state = 131
                self.ident()
                self.state = 132
                self.match(MBLParser.T__3)
                self.state = 133
                localctx.tableKind = self._input.LT(1)
                _la = self._input.LA(1)
                if not(_la==13 or _la==14):
                    localctx.tableKind = self._errHandler.recoverInline(self)
                else:
                    self._errHandler.reportMatch(self)
                    self.consume()
                self.state = 134
                self.match(MBLParser.T__14)
                self.state = 135
                self.type_()
                self.state = 136
                self.match(MBLParser.T__15)
                self.state = 137
                self.match(MBLParser.T__16)
                self.state = 138
                self.type_()
                self.state = 139
                self.match(MBLParser.T__17)
                self.state = 140
                self.expr(0)
                self.state = 141
                self.match(MBLParser.T__18)
                self.state = 143
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==23:
                    self.state = 142
                    self.placement()


                self.state = 145
                self.match(MBLParser.T__1)
                pass
            elif token in [20]:
                localctx = MBLParser.ArrayDeclContext(self, localctx)
                self.enterOuterAlt(localctx, 2)
                self.state = 147
                self.match(MBLParser.T__19)
                self.state = 148
                self.ident()
                self.state = 149
                self.match(MBLParser.T__3)
                self.state = 150
                self.type_()
                self.state = 151
                self.match(MBLParser.T__17)
                self.state = 152
                self.expr(0)
                self.state = 153
                self.match(MBLParser.T__18)
                self.state = 155
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==23:
                    self.state = 154
                    self.placement()


                self.state = 157
                self.match(MBLParser.T__1)
                pass
            elif token in [21]:
                localctx = MBLParser.CounterDeclContext(self, localctx)
                self.enterOuterAlt(localctx, 3)
                self.state = 159
                self.match(MBLParser.T__20)
                self.state = 160
                self.ident()
                self.state = 161
                self.match(MBLParser.T__17)
                self.state = 162
                self.expr(0)
                self.state = 163
                self.match(MBLParser.T__18)
                self.state = 165
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==23:
                    self.state = 164
                    self.placement()


                self.state = 167
                self.match(MBLParser.T__1)
                pass
            elif token in [22]:
                localctx = MBLParser.RegisterDeclContext(self, localctx)
                self.enterOuterAlt(localctx, 4)
                self.state = 169
                self.match(MBLParser.T__21)
                self.state = 170
                self.ident()
                self.state = 171
                self.match(MBLParser.T__3)
                self.state = 172
                self.type_()
                self.state = 173
                self.match(MBLParser.T__17)
                self.state = 174
                self.expr(0)
                self.state = 175
                self.match(MBLParser.T__18)
                self.state = 177
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==23:
                    self.state = 176
                    self.placement()


                self.state = 179
                self.match(MBLParser.T__1)
                pass
            else:
                raise NoViableAltException(self)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class PlacementContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser
            self.space = None # Token


        def getRuleIndex(self):
            return MBLParser.RULE_placement

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitPlacement" ):
                return visitor.visitPlacement(self)
            else:
                return visitor.visitChildren(self)




    def placement(self):

        localctx = MBLParser.PlacementContext(self, self._ctx, self.state)
        self.enterRule(localctx, 20, self.RULE_placement)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 183
            self.match(MBLParser.T__22)
            self.state = 184
            localctx.space = self._input.LT(1)
            _la = self._input.LA(1)
            if not((((_la) & ~0x3f) == 0 and ((1 << _la) & 117440512) != 0)):
                localctx.space = self._errHandler.recoverInline(self)
            else:
                self._errHandler.reportMatch(self)
                self.consume()
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class FnDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def body(self):
            return self.getTypedRuleContext(MBLParser.BodyContext,0)


        def params(self):
            return self.getTypedRuleContext(MBLParser.ParamsContext,0)


        def type_(self):
            return self.getTypedRuleContext(MBLParser.TypeContext,0)


        def getRuleIndex(self):
            return MBLParser.RULE_fnDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitFnDecl" ):
                return visitor.visitFnDecl(self)
            else:
                return visitor.visitChildren(self)




    def fnDecl(self):

        localctx = MBLParser.FnDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 22, self.RULE_fnDecl)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 186
            self.match(MBLParser.T__26)
            self.state = 187
            self.ident()
            self.state = 188
            self.match(MBLParser.T__14)
            self.state = 190
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if (((_la) & ~0x3f) == 0 and ((1 << _la) & 13510830145433600) != 0) or _la==79:
                self.state = 189
                self.params()


            self.state = 192
            self.match(MBLParser.T__15)
            self.state = 195
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==17:
                self.state = 193
                self.match(MBLParser.T__16)
                self.state = 194
                self.type_()


            self.state = 197
            self.body()
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class BlockDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def body(self):
            return self.getTypedRuleContext(MBLParser.BodyContext,0)


        def getRuleIndex(self):
            return MBLParser.RULE_blockDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitBlockDecl" ):
                return visitor.visitBlockDecl(self)
            else:
                return visitor.visitChildren(self)




    def blockDecl(self):

        localctx = MBLParser.BlockDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 24, self.RULE_blockDecl)
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 199
            self.match(MBLParser.T__27)
            self.state = 200
            self.ident()
            self.state = 201
            self.body()
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class ParamsContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def param(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.ParamContext)
            else:
                return self.getTypedRuleContext(MBLParser.ParamContext,i)


        def getRuleIndex(self):
            return MBLParser.RULE_params

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitParams" ):
                return visitor.visitParams(self)
            else:
                return visitor.visitChildren(self)




    def params(self):

        localctx = MBLParser.ParamsContext(self, self._ctx, self.state)
        self.enterRule(localctx, 26, self.RULE_params)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 203
            self.param()
            self.state = 208
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while _la==8:
                self.state = 204
                self.match(MBLParser.T__7)
                self.state = 205
                self.param()
                self.state = 210
                self._errHandler.sync(self)
                _la = self._input.LA(1)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class ParamContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def type_(self):
            return self.getTypedRuleContext(MBLParser.TypeContext,0)


        def getRuleIndex(self):
            return MBLParser.RULE_param

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitParam" ):
                return visitor.visitParam(self)
            else:
                return visitor.visitChildren(self)




    def param(self):

        localctx = MBLParser.ParamContext(self, self._ctx, self.state)
        self.enterRule(localctx, 28, self.RULE_param)
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 211
            self.ident()
            self.state = 212
            self.match(MBLParser.T__3)
            self.state = 213
            self.type_()
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class PipelineDeclContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def pipeItem(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.PipeItemContext)
            else:
                return self.getTypedRuleContext(MBLParser.PipeItemContext,i)


        def getRuleIndex(self):
            return MBLParser.RULE_pipelineDecl

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitPipelineDecl" ):
                return visitor.visitPipelineDecl(self)
            else:
                return visitor.visitChildren(self)




    def pipelineDecl(self):

        localctx = MBLParser.PipelineDeclContext(self, self._ctx, self.state)
        self.enterRule(localctx, 30, self.RULE_pipelineDecl)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 215
            self.match(MBLParser.T__28)
            self.state = 216
            self.ident()
            self.state = 217
            self.match(MBLParser.T__6)
            self.state = 221
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while (((_la) & ~0x3f) == 0 and ((1 << _la) & 13510830145433600) != 0) or _la==79:
                self.state = 218
                self.pipeItem()
                self.state = 223
                self._errHandler.sync(self)
                _la = self._input.LA(1)

            self.state = 224
            self.match(MBLParser.T__8)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class PipeItemContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser


        def getRuleIndex(self):
            return MBLParser.RULE_pipeItem

     
        def copyFrom(self, ctx:ParserRuleContext):
            super().copyFrom(ctx)



    class PipeStageContext(PipeItemContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.PipeItemContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def ident(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.IdentContext)
            else:
                return self.getTypedRuleContext(MBLParser.IdentContext,i)

        def INT(self, i:int=None):
            if i is None:
                return self.getTokens(MBLParser.INT)
            else:
                return self.getToken(MBLParser.INT, i)

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitPipeStage" ):
                return visitor.visitPipeStage(self)
            else:
                return visitor.visitChildren(self)


    class PipeConnectContext(PipeItemContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.PipeItemContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def pipeEnd(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.PipeEndContext)
            else:
                return self.getTypedRuleContext(MBLParser.PipeEndContext,i)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitPipeConnect" ):
                return visitor.visitPipeConnect(self)
            else:
                return visitor.visitChildren(self)


    class PipePortsContext(PipeItemContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.PipeItemContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def INT(self, i:int=None):
            if i is None:
                return self.getTokens(MBLParser.INT)
            else:
                return self.getToken(MBLParser.INT, i)

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitPipePorts" ):
                return visitor.visitPipePorts(self)
            else:
                return visitor.visitChildren(self)



    def pipeItem(self):

        localctx = MBLParser.PipeItemContext(self, self._ctx, self.state)
        self.enterRule(localctx, 32, self.RULE_pipeItem)
        self._la = 0 # Token type
        try:
            self.state = 262
            self._errHandler.sync(self)
            la_ = self._interp.adaptivePredict(self._input,19,self._ctx)
            if la_ == 1:
                localctx = MBLParser.PipePortsContext(self, localctx)
                self.enterOuterAlt(localctx, 1)
                self.state = 226
                self.match(MBLParser.T__29)
                self.state = 227
                self.match(MBLParser.INT)
                self.state = 230
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==31:
                    self.state = 228
                    self.match(MBLParser.T__30)
                    self.state = 229
                    self.match(MBLParser.INT)


                self.state = 232
                self.match(MBLParser.T__1)
                pass

            elif la_ == 2:
                localctx = MBLParser.PipeStageContext(self, localctx)
                self.enterOuterAlt(localctx, 2)
                self.state = 233
                self.match(MBLParser.T__31)
                self.state = 234
                self.ident()
                self.state = 235
                self.match(MBLParser.T__4)
                self.state = 236
                self.ident()
                self.state = 249
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==33:
                    self.state = 237
                    self.match(MBLParser.T__32)
                    self.state = 238
                    self.match(MBLParser.T__33)
                    self.state = 239
                    self.match(MBLParser.T__14)
                    self.state = 240
                    self.match(MBLParser.INT)
                    self.state = 245
                    self._errHandler.sync(self)
                    _la = self._input.LA(1)
                    while _la==8:
                        self.state = 241
                        self.match(MBLParser.T__7)
                        self.state = 242
                        self.match(MBLParser.INT)
                        self.state = 247
                        self._errHandler.sync(self)
                        _la = self._input.LA(1)

                    self.state = 248
                    self.match(MBLParser.T__15)


                self.state = 251
                self.match(MBLParser.T__1)
                pass

            elif la_ == 3:
                localctx = MBLParser.PipeConnectContext(self, localctx)
                self.enterOuterAlt(localctx, 3)
                self.state = 253
                self.pipeEnd()
                self.state = 256 
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                while True:
                    self.state = 254
                    self.match(MBLParser.T__16)
                    self.state = 255
                    self.pipeEnd()
                    self.state = 258 
                    self._errHandler.sync(self)
                    _la = self._input.LA(1)
                    if not (_la==17):
                        break

                self.state = 260
                self.match(MBLParser.T__1)
                pass


        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class PipeEndContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ident(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.IdentContext)
            else:
                return self.getTypedRuleContext(MBLParser.IdentContext,i)


        def getRuleIndex(self):
            return MBLParser.RULE_pipeEnd

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitPipeEnd" ):
                return visitor.visitPipeEnd(self)
            else:
                return visitor.visitChildren(self)




    def pipeEnd(self):

        localctx = MBLParser.PipeEndContext(self, self._ctx, self.state)
        self.enterRule(localctx, 34, self.RULE_pipeEnd)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 264
            self.ident()
            self.state = 267
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            if _la==35:
                self.state = 265
                self.match(MBLParser.T__34)
                self.state = 266
                self.ident()


        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class BodyContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def stmt(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.StmtContext)
            else:
                return self.getTypedRuleContext(MBLParser.StmtContext,i)


        def getRuleIndex(self):
            return MBLParser.RULE_body

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitBody" ):
                return visitor.visitBody(self)
            else:
                return visitor.visitChildren(self)




    def body(self):

        localctx = MBLParser.BodyContext(self, self._ctx, self.state)
        self.enterRule(localctx, 36, self.RULE_body)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 269
            self.match(MBLParser.T__6)
            self.state = 273
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while (((_la) & ~0x3f) == 0 and ((1 << _la) & 144097970750550144) != 0) or ((((_la - 73)) & ~0x3f) == 0 and ((1 << (_la - 73)) & 83) != 0):
                self.state = 270
                self.stmt()
                self.state = 275
                self._errHandler.sync(self)
                _la = self._input.LA(1)

            self.state = 276
            self.match(MBLParser.T__8)
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class StmtContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser


        def getRuleIndex(self):
            return MBLParser.RULE_stmt

     
        def copyFrom(self, ctx:ParserRuleContext):
            super().copyFrom(ctx)



    class DropStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitDropStmt" ):
                return visitor.visitDropStmt(self)
            else:
                return visitor.visitChildren(self)


    class LetElseStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)

        def stmt(self):
            return self.getTypedRuleContext(MBLParser.StmtContext,0)

        def type_(self):
            return self.getTypedRuleContext(MBLParser.TypeContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitLetElseStmt" ):
                return visitor.visitLetElseStmt(self)
            else:
                return visitor.visitChildren(self)


    class ForStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)

        def expr(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.ExprContext)
            else:
                return self.getTypedRuleContext(MBLParser.ExprContext,i)

        def body(self):
            return self.getTypedRuleContext(MBLParser.BodyContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitForStmt" ):
                return visitor.visitForStmt(self)
            else:
                return visitor.visitChildren(self)


    class LetStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.kw = None # Token
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)

        def type_(self):
            return self.getTypedRuleContext(MBLParser.TypeContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitLetStmt" ):
                return visitor.visitLetStmt(self)
            else:
                return visitor.visitChildren(self)


    class ForwardStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def expr(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.ExprContext)
            else:
                return self.getTypedRuleContext(MBLParser.ExprContext,i)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitForwardStmt" ):
                return visitor.visitForwardStmt(self)
            else:
                return visitor.visitChildren(self)


    class AssignStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.op = None # Token
            self.copyFrom(ctx)

        def expr(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.ExprContext)
            else:
                return self.getTypedRuleContext(MBLParser.ExprContext,i)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitAssignStmt" ):
                return visitor.visitAssignStmt(self)
            else:
                return visitor.visitChildren(self)


    class ReturnStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitReturnStmt" ):
                return visitor.visitReturnStmt(self)
            else:
                return visitor.visitChildren(self)


    class ExprStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitExprStmt" ):
                return visitor.visitExprStmt(self)
            else:
                return visitor.visitChildren(self)


    class IfStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.ifTail = None # StmtContext
            self.elseBody = None # BodyContext
            self.copyFrom(ctx)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)

        def body(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.BodyContext)
            else:
                return self.getTypedRuleContext(MBLParser.BodyContext,i)

        def stmt(self):
            return self.getTypedRuleContext(MBLParser.StmtContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitIfStmt" ):
                return visitor.visitIfStmt(self)
            else:
                return visitor.visitChildren(self)


    class BlockStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def body(self):
            return self.getTypedRuleContext(MBLParser.BodyContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitBlockStmt" ):
                return visitor.visitBlockStmt(self)
            else:
                return visitor.visitChildren(self)


    class AdjustStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.op = None # Token
            self.copyFrom(ctx)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)

        def stmt(self):
            return self.getTypedRuleContext(MBLParser.StmtContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitAdjustStmt" ):
                return visitor.visitAdjustStmt(self)
            else:
                return visitor.visitChildren(self)


    class NextStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitNextStmt" ):
                return visitor.visitNextStmt(self)
            else:
                return visitor.visitChildren(self)


    class ExceptionStmtContext(StmtContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.StmtContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitExceptionStmt" ):
                return visitor.visitExceptionStmt(self)
            else:
                return visitor.visitChildren(self)



    def stmt(self):

        localctx = MBLParser.StmtContext(self, self._ctx, self.state)
        self.enterRule(localctx, 38, self.RULE_stmt)
        self._la = 0 # Token type
        try:
            self.state = 370
            self._errHandler.sync(self)
            la_ = self._interp.adaptivePredict(self._input,29,self._ctx)
            if la_ == 1:
                localctx = MBLParser.LetElseStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 1)
                self.state = 278
                self.match(MBLParser.T__35)
                self.state = 279
                self.ident()
                self.state = 282
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==4:
                    self.state = 280
                    self.match(MBLParser.T__3)
                    self.state = 281
                    self.type_()


                self.state = 284
                self.match(MBLParser.T__4)
                self.state = 285
                self.expr(0)
                self.state = 286
                self.match(MBLParser.T__36)
                self.state = 287
                self.stmt()
                pass

            elif la_ == 2:
                localctx = MBLParser.LetStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 2)
                self.state = 289
                localctx.kw = self._input.LT(1)
                _la = self._input.LA(1)
                if not(_la==36 or _la==38):
                    localctx.kw = self._errHandler.recoverInline(self)
                else:
                    self._errHandler.reportMatch(self)
                    self.consume()
                self.state = 290
                self.ident()
                self.state = 293
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==4:
                    self.state = 291
                    self.match(MBLParser.T__3)
                    self.state = 292
                    self.type_()


                self.state = 295
                self.match(MBLParser.T__4)
                self.state = 296
                self.expr(0)
                self.state = 297
                self.match(MBLParser.T__1)
                pass

            elif la_ == 3:
                localctx = MBLParser.AssignStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 3)
                self.state = 299
                self.expr(0)
                self.state = 300
                localctx.op = self._input.LT(1)
                _la = self._input.LA(1)
                if not((((_la) & ~0x3f) == 0 and ((1 << _la) & 17042430230560) != 0)):
                    localctx.op = self._errHandler.recoverInline(self)
                else:
                    self._errHandler.reportMatch(self)
                    self.consume()
                self.state = 301
                self.expr(0)
                self.state = 302
                self.match(MBLParser.T__1)
                pass

            elif la_ == 4:
                localctx = MBLParser.IfStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 4)
                self.state = 304
                self.match(MBLParser.T__43)
                self.state = 305
                self.expr(0)
                self.state = 306
                self.body()
                self.state = 312
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==37:
                    self.state = 307
                    self.match(MBLParser.T__36)
                    self.state = 310
                    self._errHandler.sync(self)
                    la_ = self._interp.adaptivePredict(self._input,24,self._ctx)
                    if la_ == 1:
                        self.state = 308
                        localctx.ifTail = self.stmt()
                        pass

                    elif la_ == 2:
                        self.state = 309
                        localctx.elseBody = self.body()
                        pass




                pass

            elif la_ == 5:
                localctx = MBLParser.ForStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 5)
                self.state = 314
                self.match(MBLParser.T__44)
                self.state = 315
                self.ident()
                self.state = 316
                self.match(MBLParser.T__22)
                self.state = 317
                self.expr(0)
                self.state = 318
                self.match(MBLParser.T__30)
                self.state = 319
                self.expr(0)
                self.state = 320
                self.body()
                pass

            elif la_ == 6:
                localctx = MBLParser.ReturnStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 6)
                self.state = 322
                self.match(MBLParser.T__45)
                self.state = 324
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if (((_la) & ~0x3f) == 0 and ((1 << _la) & 141863419525525504) != 0) or ((((_la - 73)) & ~0x3f) == 0 and ((1 << (_la - 73)) & 83) != 0):
                    self.state = 323
                    self.expr(0)


                self.state = 326
                self.match(MBLParser.T__1)
                pass

            elif la_ == 7:
                localctx = MBLParser.ForwardStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 7)
                self.state = 327
                self.match(MBLParser.T__46)
                self.state = 328
                self.match(MBLParser.T__14)
                self.state = 329
                self.expr(0)
                self.state = 332
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==8:
                    self.state = 330
                    self.match(MBLParser.T__7)
                    self.state = 331
                    self.expr(0)


                self.state = 334
                self.match(MBLParser.T__15)
                self.state = 335
                self.match(MBLParser.T__1)
                pass

            elif la_ == 8:
                localctx = MBLParser.DropStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 8)
                self.state = 337
                self.match(MBLParser.T__47)
                self.state = 338
                self.match(MBLParser.T__14)
                self.state = 339
                self.ident()
                self.state = 340
                self.match(MBLParser.T__15)
                self.state = 341
                self.match(MBLParser.T__1)
                pass

            elif la_ == 9:
                localctx = MBLParser.ExceptionStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 9)
                self.state = 343
                self.match(MBLParser.T__48)
                self.state = 344
                self.match(MBLParser.T__14)
                self.state = 345
                self.expr(0)
                self.state = 346
                self.match(MBLParser.T__15)
                self.state = 347
                self.match(MBLParser.T__1)
                pass

            elif la_ == 10:
                localctx = MBLParser.NextStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 10)
                self.state = 349
                self.match(MBLParser.T__49)
                self.state = 354
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if _la==15:
                    self.state = 350
                    self.match(MBLParser.T__14)
                    self.state = 351
                    self.ident()
                    self.state = 352
                    self.match(MBLParser.T__15)


                self.state = 356
                self.match(MBLParser.T__1)
                pass

            elif la_ == 11:
                localctx = MBLParser.AdjustStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 11)
                self.state = 357
                self.match(MBLParser.T__50)
                self.state = 358
                self.match(MBLParser.T__34)
                self.state = 359
                localctx.op = self._input.LT(1)
                _la = self._input.LA(1)
                if not(_la==52 or _la==53):
                    localctx.op = self._errHandler.recoverInline(self)
                else:
                    self._errHandler.reportMatch(self)
                    self.consume()
                self.state = 360
                self.match(MBLParser.T__14)
                self.state = 361
                self.expr(0)
                self.state = 362
                self.match(MBLParser.T__15)
                self.state = 363
                self.match(MBLParser.T__36)
                self.state = 364
                self.stmt()
                pass

            elif la_ == 12:
                localctx = MBLParser.BlockStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 12)
                self.state = 366
                self.body()
                pass

            elif la_ == 13:
                localctx = MBLParser.ExprStmtContext(self, localctx)
                self.enterOuterAlt(localctx, 13)
                self.state = 367
                self.expr(0)
                self.state = 368
                self.match(MBLParser.T__1)
                pass


        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class ExprContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser


        def getRuleIndex(self):
            return MBLParser.RULE_expr

     
        def copyFrom(self, ctx:ParserRuleContext):
            super().copyFrom(ctx)


    class IndexExprContext(ExprContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.ExprContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def expr(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.ExprContext)
            else:
                return self.getTypedRuleContext(MBLParser.ExprContext,i)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitIndexExpr" ):
                return visitor.visitIndexExpr(self)
            else:
                return visitor.visitChildren(self)


    class BinExprContext(ExprContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.ExprContext
            super().__init__(parser)
            self.op = None # Token
            self.copyFrom(ctx)

        def expr(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.ExprContext)
            else:
                return self.getTypedRuleContext(MBLParser.ExprContext,i)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitBinExpr" ):
                return visitor.visitBinExpr(self)
            else:
                return visitor.visitChildren(self)


    class UnaryExprContext(ExprContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.ExprContext
            super().__init__(parser)
            self.op = None # Token
            self.copyFrom(ctx)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitUnaryExpr" ):
                return visitor.visitUnaryExpr(self)
            else:
                return visitor.visitChildren(self)


    class PrimaryExprContext(ExprContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.ExprContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def primary(self):
            return self.getTypedRuleContext(MBLParser.PrimaryContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitPrimaryExpr" ):
                return visitor.visitPrimaryExpr(self)
            else:
                return visitor.visitChildren(self)


    class CastExprContext(ExprContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.ExprContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)

        def type_(self):
            return self.getTypedRuleContext(MBLParser.TypeContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitCastExpr" ):
                return visitor.visitCastExpr(self)
            else:
                return visitor.visitChildren(self)


    class MethodExprContext(ExprContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.ExprContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)

        def args(self):
            return self.getTypedRuleContext(MBLParser.ArgsContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitMethodExpr" ):
                return visitor.visitMethodExpr(self)
            else:
                return visitor.visitChildren(self)


    class SliceExprContext(ExprContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.ExprContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def expr(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.ExprContext)
            else:
                return self.getTypedRuleContext(MBLParser.ExprContext,i)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitSliceExpr" ):
                return visitor.visitSliceExpr(self)
            else:
                return visitor.visitChildren(self)


    class FieldExprContext(ExprContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.ExprContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitFieldExpr" ):
                return visitor.visitFieldExpr(self)
            else:
                return visitor.visitChildren(self)



    def expr(self, _p:int=0):
        _parentctx = self._ctx
        _parentState = self.state
        localctx = MBLParser.ExprContext(self, self._ctx, _parentState)
        _prevctx = localctx
        _startState = 40
        self.enterRecursionRule(localctx, 40, self.RULE_expr, _p)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 376
            self._errHandler.sync(self)
            token = self._input.LA(1)
            if token in [12, 13, 14, 15, 20, 21, 22, 24, 25, 26, 30, 32, 33, 34, 51, 52, 53, 73, 74, 77, 79]:
                localctx = MBLParser.PrimaryExprContext(self, localctx)
                self._ctx = localctx
                _prevctx = localctx

                self.state = 373
                self.primary()
                pass
            elif token in [54, 55, 56]:
                localctx = MBLParser.UnaryExprContext(self, localctx)
                self._ctx = localctx
                _prevctx = localctx
                self.state = 374
                localctx.op = self._input.LT(1)
                _la = self._input.LA(1)
                if not((((_la) & ~0x3f) == 0 and ((1 << _la) & 126100789566373888) != 0)):
                    localctx.op = self._errHandler.recoverInline(self)
                else:
                    self._errHandler.reportMatch(self)
                    self.consume()
                self.state = 375
                self.expr(11)
                pass
            else:
                raise NoViableAltException(self)

            self._ctx.stop = self._input.LT(-1)
            self.state = 434
            self._errHandler.sync(self)
            _alt = self._interp.adaptivePredict(self._input,33,self._ctx)
            while _alt!=2 and _alt!=ATN.INVALID_ALT_NUMBER:
                if _alt==1:
                    if self._parseListeners is not None:
                        self.triggerExitRuleEvent()
                    _prevctx = localctx
                    self.state = 432
                    self._errHandler.sync(self)
                    la_ = self._interp.adaptivePredict(self._input,32,self._ctx)
                    if la_ == 1:
                        localctx = MBLParser.BinExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 378
                        if not self.precpred(self._ctx, 9):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 9)")
                        self.state = 379
                        localctx.op = self.match(MBLParser.T__57)
                        self.state = 380
                        self.expr(10)
                        pass

                    elif la_ == 2:
                        localctx = MBLParser.BinExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 381
                        if not self.precpred(self._ctx, 8):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 8)")
                        self.state = 382
                        localctx.op = self._input.LT(1)
                        _la = self._input.LA(1)
                        if not(_la==54 or _la==59):
                            localctx.op = self._errHandler.recoverInline(self)
                        else:
                            self._errHandler.reportMatch(self)
                            self.consume()
                        self.state = 383
                        self.expr(9)
                        pass

                    elif la_ == 3:
                        localctx = MBLParser.BinExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 384
                        if not self.precpred(self._ctx, 7):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 7)")
                        self.state = 385
                        localctx.op = self._input.LT(1)
                        _la = self._input.LA(1)
                        if not(_la==60 or _la==61):
                            localctx.op = self._errHandler.recoverInline(self)
                        else:
                            self._errHandler.reportMatch(self)
                            self.consume()
                        self.state = 386
                        self.expr(8)
                        pass

                    elif la_ == 4:
                        localctx = MBLParser.BinExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 387
                        if not self.precpred(self._ctx, 6):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 6)")
                        self.state = 388
                        localctx.op = self.match(MBLParser.T__61)
                        self.state = 389
                        self.expr(7)
                        pass

                    elif la_ == 5:
                        localctx = MBLParser.BinExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 390
                        if not self.precpred(self._ctx, 5):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 5)")
                        self.state = 391
                        localctx.op = self.match(MBLParser.T__62)
                        self.state = 392
                        self.expr(6)
                        pass

                    elif la_ == 6:
                        localctx = MBLParser.BinExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 393
                        if not self.precpred(self._ctx, 4):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 4)")
                        self.state = 394
                        localctx.op = self.match(MBLParser.T__63)
                        self.state = 395
                        self.expr(5)
                        pass

                    elif la_ == 7:
                        localctx = MBLParser.BinExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 396
                        if not self.precpred(self._ctx, 3):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 3)")
                        self.state = 397
                        localctx.op = self._input.LT(1)
                        _la = self._input.LA(1)
                        if not(((((_la - 65)) & ~0x3f) == 0 and ((1 << (_la - 65)) & 63) != 0)):
                            localctx.op = self._errHandler.recoverInline(self)
                        else:
                            self._errHandler.reportMatch(self)
                            self.consume()
                        self.state = 398
                        self.expr(4)
                        pass

                    elif la_ == 8:
                        localctx = MBLParser.BinExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 399
                        if not self.precpred(self._ctx, 2):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 2)")
                        self.state = 400
                        localctx.op = self.match(MBLParser.T__70)
                        self.state = 401
                        self.expr(3)
                        pass

                    elif la_ == 9:
                        localctx = MBLParser.BinExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 402
                        if not self.precpred(self._ctx, 1):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 1)")
                        self.state = 403
                        localctx.op = self.match(MBLParser.T__71)
                        self.state = 404
                        self.expr(2)
                        pass

                    elif la_ == 10:
                        localctx = MBLParser.MethodExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 405
                        if not self.precpred(self._ctx, 15):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 15)")
                        self.state = 406
                        self.match(MBLParser.T__34)
                        self.state = 407
                        self.ident()
                        self.state = 408
                        self.match(MBLParser.T__14)
                        self.state = 410
                        self._errHandler.sync(self)
                        _la = self._input.LA(1)
                        if (((_la) & ~0x3f) == 0 and ((1 << _la) & 141863419525525504) != 0) or ((((_la - 73)) & ~0x3f) == 0 and ((1 << (_la - 73)) & 83) != 0):
                            self.state = 409
                            self.args()


                        self.state = 412
                        self.match(MBLParser.T__15)
                        pass

                    elif la_ == 11:
                        localctx = MBLParser.FieldExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 414
                        if not self.precpred(self._ctx, 14):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 14)")
                        self.state = 415
                        self.match(MBLParser.T__34)
                        self.state = 416
                        self.ident()
                        pass

                    elif la_ == 12:
                        localctx = MBLParser.SliceExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 417
                        if not self.precpred(self._ctx, 13):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 13)")
                        self.state = 418
                        self.match(MBLParser.T__17)
                        self.state = 419
                        self.expr(0)
                        self.state = 420
                        self.match(MBLParser.T__3)
                        self.state = 421
                        self.expr(0)
                        self.state = 422
                        self.match(MBLParser.T__18)
                        pass

                    elif la_ == 13:
                        localctx = MBLParser.IndexExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 424
                        if not self.precpred(self._ctx, 12):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 12)")
                        self.state = 425
                        self.match(MBLParser.T__17)
                        self.state = 426
                        self.expr(0)
                        self.state = 427
                        self.match(MBLParser.T__18)
                        pass

                    elif la_ == 14:
                        localctx = MBLParser.CastExprContext(self, MBLParser.ExprContext(self, _parentctx, _parentState))
                        self.pushNewRecursionContext(localctx, _startState, self.RULE_expr)
                        self.state = 429
                        if not self.precpred(self._ctx, 10):
                            from antlr4.error.Errors import FailedPredicateException
                            raise FailedPredicateException(self, "self.precpred(self._ctx, 10)")
                        self.state = 430
                        self.match(MBLParser.T__56)
                        self.state = 431
                        self.type_()
                        pass

             
                self.state = 436
                self._errHandler.sync(self)
                _alt = self._interp.adaptivePredict(self._input,33,self._ctx)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.unrollRecursionContexts(_parentctx)
        return localctx


    class PrimaryContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser


        def getRuleIndex(self):
            return MBLParser.RULE_primary

     
        def copyFrom(self, ctx:ParserRuleContext):
            super().copyFrom(ctx)



    class BoolLitContext(PrimaryContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.PrimaryContext
            super().__init__(parser)
            self.copyFrom(ctx)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitBoolLit" ):
                return visitor.visitBoolLit(self)
            else:
                return visitor.visitChildren(self)


    class IntLitContext(PrimaryContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.PrimaryContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def INT(self):
            return self.getToken(MBLParser.INT, 0)

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitIntLit" ):
                return visitor.visitIntLit(self)
            else:
                return visitor.visitChildren(self)


    class CallExprContext(PrimaryContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.PrimaryContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)

        def args(self):
            return self.getTypedRuleContext(MBLParser.ArgsContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitCallExpr" ):
                return visitor.visitCallExpr(self)
            else:
                return visitor.visitChildren(self)


    class PacketViewContext(PrimaryContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.PrimaryContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitPacketView" ):
                return visitor.visitPacketView(self)
            else:
                return visitor.visitChildren(self)


    class NameExprContext(PrimaryContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.PrimaryContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitNameExpr" ):
                return visitor.visitNameExpr(self)
            else:
                return visitor.visitChildren(self)


    class ParenExprContext(PrimaryContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.PrimaryContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def expr(self):
            return self.getTypedRuleContext(MBLParser.ExprContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitParenExpr" ):
                return visitor.visitParenExpr(self)
            else:
                return visitor.visitChildren(self)



    def primary(self):

        localctx = MBLParser.PrimaryContext(self, self._ctx, self.state)
        self.enterRule(localctx, 42, self.RULE_primary)
        self._la = 0 # Token type
        try:
            self.state = 459
            self._errHandler.sync(self)
            la_ = self._interp.adaptivePredict(self._input,35,self._ctx)
            if la_ == 1:
                localctx = MBLParser.IntLitContext(self, localctx)
                self.enterOuterAlt(localctx, 1)
                self.state = 437
                self.match(MBLParser.INT)
                pass

            elif la_ == 2:
                localctx = MBLParser.BoolLitContext(self, localctx)
                self.enterOuterAlt(localctx, 2)
                self.state = 438
                _la = self._input.LA(1)
                if not(_la==73 or _la==74):
                    self._errHandler.recoverInline(self)
                else:
                    self._errHandler.reportMatch(self)
                    self.consume()
                pass

            elif la_ == 3:
                localctx = MBLParser.PacketViewContext(self, localctx)
                self.enterOuterAlt(localctx, 3)
                self.state = 439
                self.match(MBLParser.T__50)
                self.state = 440
                self.match(MBLParser.T__66)
                self.state = 441
                self.ident()
                self.state = 442
                self.match(MBLParser.T__68)
                self.state = 443
                self.match(MBLParser.T__14)
                self.state = 444
                self.expr(0)
                self.state = 445
                self.match(MBLParser.T__15)
                pass

            elif la_ == 4:
                localctx = MBLParser.CallExprContext(self, localctx)
                self.enterOuterAlt(localctx, 4)
                self.state = 447
                self.ident()
                self.state = 448
                self.match(MBLParser.T__14)
                self.state = 450
                self._errHandler.sync(self)
                _la = self._input.LA(1)
                if (((_la) & ~0x3f) == 0 and ((1 << _la) & 141863419525525504) != 0) or ((((_la - 73)) & ~0x3f) == 0 and ((1 << (_la - 73)) & 83) != 0):
                    self.state = 449
                    self.args()


                self.state = 452
                self.match(MBLParser.T__15)
                pass

            elif la_ == 5:
                localctx = MBLParser.NameExprContext(self, localctx)
                self.enterOuterAlt(localctx, 5)
                self.state = 454
                self.ident()
                pass

            elif la_ == 6:
                localctx = MBLParser.ParenExprContext(self, localctx)
                self.enterOuterAlt(localctx, 6)
                self.state = 455
                self.match(MBLParser.T__14)
                self.state = 456
                self.expr(0)
                self.state = 457
                self.match(MBLParser.T__15)
                pass


        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class ArgsContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def expr(self, i:int=None):
            if i is None:
                return self.getTypedRuleContexts(MBLParser.ExprContext)
            else:
                return self.getTypedRuleContext(MBLParser.ExprContext,i)


        def getRuleIndex(self):
            return MBLParser.RULE_args

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitArgs" ):
                return visitor.visitArgs(self)
            else:
                return visitor.visitChildren(self)




    def args(self):

        localctx = MBLParser.ArgsContext(self, self._ctx, self.state)
        self.enterRule(localctx, 44, self.RULE_args)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 461
            self.expr(0)
            self.state = 466
            self._errHandler.sync(self)
            _la = self._input.LA(1)
            while _la==8:
                self.state = 462
                self.match(MBLParser.T__7)
                self.state = 463
                self.expr(0)
                self.state = 468
                self._errHandler.sync(self)
                _la = self._input.LA(1)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class TypeContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser


        def getRuleIndex(self):
            return MBLParser.RULE_type

     
        def copyFrom(self, ctx:ParserRuleContext):
            super().copyFrom(ctx)



    class NamedTypeContext(TypeContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.TypeContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def ident(self):
            return self.getTypedRuleContext(MBLParser.IdentContext,0)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitNamedType" ):
                return visitor.visitNamedType(self)
            else:
                return visitor.visitChildren(self)


    class BitTypeContext(TypeContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.TypeContext
            super().__init__(parser)
            self.copyFrom(ctx)

        def INT(self):
            return self.getToken(MBLParser.INT, 0)

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitBitType" ):
                return visitor.visitBitType(self)
            else:
                return visitor.visitChildren(self)


    class BoolTypeContext(TypeContext):

        def __init__(self, parser, ctx:ParserRuleContext): # actually a MBLParser.TypeContext
            super().__init__(parser)
            self.copyFrom(ctx)


        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitBoolType" ):
                return visitor.visitBoolType(self)
            else:
                return visitor.visitChildren(self)



    def type_(self):

        localctx = MBLParser.TypeContext(self, self._ctx, self.state)
        self.enterRule(localctx, 46, self.RULE_type)
        try:
            self.state = 475
            self._errHandler.sync(self)
            token = self._input.LA(1)
            if token in [75]:
                localctx = MBLParser.BitTypeContext(self, localctx)
                self.enterOuterAlt(localctx, 1)
                self.state = 469
                self.match(MBLParser.T__74)
                self.state = 470
                self.match(MBLParser.T__66)
                self.state = 471
                self.match(MBLParser.INT)
                self.state = 472
                self.match(MBLParser.T__68)
                pass
            elif token in [76]:
                localctx = MBLParser.BoolTypeContext(self, localctx)
                self.enterOuterAlt(localctx, 2)
                self.state = 473
                self.match(MBLParser.T__75)
                pass
            elif token in [12, 13, 14, 20, 21, 22, 24, 25, 26, 30, 32, 33, 34, 52, 53, 79]:
                localctx = MBLParser.NamedTypeContext(self, localctx)
                self.enterOuterAlt(localctx, 3)
                self.state = 474
                self.ident()
                pass
            else:
                raise NoViableAltException(self)

        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx


    class IdentContext(ParserRuleContext):
        __slots__ = 'parser'

        def __init__(self, parser, parent:ParserRuleContext=None, invokingState:int=-1):
            super().__init__(parent, invokingState)
            self.parser = parser

        def ID(self):
            return self.getToken(MBLParser.ID, 0)

        def getRuleIndex(self):
            return MBLParser.RULE_ident

        def accept(self, visitor:ParseTreeVisitor):
            if hasattr( visitor, "visitIdent" ):
                return visitor.visitIdent(self)
            else:
                return visitor.visitChildren(self)




    def ident(self):

        localctx = MBLParser.IdentContext(self, self._ctx, self.state)
        self.enterRule(localctx, 48, self.RULE_ident)
        self._la = 0 # Token type
        try:
            self.enterOuterAlt(localctx, 1)
            self.state = 477
            _la = self._input.LA(1)
            if not((((_la) & ~0x3f) == 0 and ((1 << _la) & 13510830145433600) != 0) or _la==79):
                self._errHandler.recoverInline(self)
            else:
                self._errHandler.reportMatch(self)
                self.consume()
        except RecognitionException as re:
            localctx.exception = re
            self._errHandler.reportError(self, re)
            self._errHandler.recover(self, re)
        finally:
            self.exitRule()
        return localctx



    def sempred(self, localctx:RuleContext, ruleIndex:int, predIndex:int):
        if self._predicates == None:
            self._predicates = dict()
        self._predicates[20] = self.expr_sempred
        pred = self._predicates.get(ruleIndex, None)
        if pred is None:
            raise Exception("No predicate with index:" + str(ruleIndex))
        else:
            return pred(localctx, predIndex)

    def expr_sempred(self, localctx:ExprContext, predIndex:int):
            if predIndex == 0:
                return self.precpred(self._ctx, 9)
         

            if predIndex == 1:
                return self.precpred(self._ctx, 8)
         

            if predIndex == 2:
                return self.precpred(self._ctx, 7)
         

            if predIndex == 3:
                return self.precpred(self._ctx, 6)
         

            if predIndex == 4:
                return self.precpred(self._ctx, 5)
         

            if predIndex == 5:
                return self.precpred(self._ctx, 4)
         

            if predIndex == 6:
                return self.precpred(self._ctx, 3)
         

            if predIndex == 7:
                return self.precpred(self._ctx, 2)
         

            if predIndex == 8:
                return self.precpred(self._ctx, 1)
         

            if predIndex == 9:
                return self.precpred(self._ctx, 15)
         

            if predIndex == 10:
                return self.precpred(self._ctx, 14)
         

            if predIndex == 11:
                return self.precpred(self._ctx, 13)
         

            if predIndex == 12:
                return self.precpred(self._ctx, 12)
         

            if predIndex == 13:
                return self.precpred(self._ctx, 10)
         




